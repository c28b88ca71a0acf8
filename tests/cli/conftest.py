"""The folder the hostile-input suites (test_hostile_inputs_*.py) run in, and the guard that no
simulation starts: each refusal there must come before any run."""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from pathlib import Path

import pytest

# A tiny Llama-like shape, valid: each suite changes one field of it, or points an output at it.
TINY_SHAPE = {"hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 2,
              "num_hidden_layers": 2, "intermediate_size": 1024, "vocab_size": 1000}  # fmt: skip


@pytest.fixture
def folder(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder: the tiny shape as m/config.json, and the test module's own
    `SCENARIO` (which reads it) as s.yaml and `CALIBRATION` (which reads s.yaml) as cal.yaml."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(TINY_SHAPE), encoding="utf-8")
    (tmp_path / "s.yaml").write_text(request.module.SCENARIO, encoding="utf-8")
    (tmp_path / "cal.yaml").write_text(request.module.CALIBRATION, encoding="utf-8")
    return tmp_path


@pytest.fixture
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every refusal comes before a simulation would start."""

    def refuse(*args, **kwargs):
        raise AssertionError("a simulation started: the input was not refused up front")

    # Modules that bind `simulate` on import must be imported before the patch: one imported
    # first under it would keep `refuse` for the rest of the worker's tests. Then every bound
    # copy is patched (and restored after the test), not only the defining module's.
    import simsched.results.simulate as defining
    import simsched.studies as studies

    for info in pkgutil.walk_packages(studies.__path__, "simsched.studies."):
        importlib.import_module(info.name)
    real = defining.simulate
    for name, module in list(sys.modules.items()):
        if name.startswith("simsched") and getattr(module, "simulate", None) is real:
            monkeypatch.setattr(module, "simulate", refuse)
