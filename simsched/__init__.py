"""simsched: a discrete-event simulator of multi-tenant LLM inference serving."""

from __future__ import annotations

from simsched.config.loading import load_scenario
from simsched.config.scenario import Scenario
from simsched.errors import InputError
from simsched.results.frames import SimulationResult
from simsched.results.simulate import simulate
from simsched.studies.sweep import sweep

__version__ = "0.1.0"

__all__ = ["InputError", "Scenario", "SimulationResult", "load_scenario", "simulate", "sweep"]
