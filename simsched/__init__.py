"""simsched: a discrete-event simulator of multi-tenant LLM inference serving.

The public names load on first use (PEP 562), so `import simsched` and `simsched --version` stay
fast: SimPy, pandas, matplotlib and Dask are imported only by what needs them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "InputError": "simsched.errors",
    "Scenario": "simsched.config.scenario",
    "load_scenario": "simsched.config.loading",
    "SimulationResult": "simsched.results.frames",
    "simulate": "simsched.results.simulate",
    "sweep": "simsched.studies.sweep",
    "plan": "simsched.studies.plan",
    "write_report": "simsched.outputs.report",
}

__all__ = [  # a literal, so that linters see what the lazy imports below export
    "InputError",
    "Scenario",
    "SimulationResult",
    "load_scenario",
    "plan",
    "simulate",
    "sweep",
    "write_report",
]

if TYPE_CHECKING:  # for type checkers and editors; at run time __getattr__ loads these
    from simsched.config.loading import load_scenario
    from simsched.config.scenario import Scenario
    from simsched.errors import InputError
    from simsched.outputs.report import write_report
    from simsched.results.frames import SimulationResult
    from simsched.results.simulate import simulate
    from simsched.studies.plan import plan
    from simsched.studies.sweep import sweep


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'simsched' has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
