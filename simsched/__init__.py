"""simsched: a discrete-event simulator of multi-tenant LLM inference serving."""

from __future__ import annotations

from simsched.errors import InputError
from simsched.loading import load_scenario
from simsched.results import SimulationResult
from simsched.scenario import Scenario
from simsched.simulation import simulate
from simsched.sweep import sweep

__version__ = "0.1.0"

__all__ = ["InputError", "Scenario", "SimulationResult", "load_scenario", "simulate", "sweep"]
