"""What starting simsched loads: the public API and `--version` load no heavy library, and
`simsched validate` loads no plotting or Dask. Checked in a fresh interpreter each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# slow: each check starts a fresh interpreter, which is the point; `make test-slow` runs them.
pytestmark = pytest.mark.slow


def loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    return set(out.stdout.splitlines()[-1].split())


def test_import_simsched_loads_no_heavy_library():
    assert not {"simpy", "pandas", "matplotlib", "dask"} & loaded_after("import simsched")


def test_the_version_flag_loads_typer_only():
    code = (
        "from simsched.cli.app import app\n"
        "try:\n    app(['--version'])\nexcept SystemExit:\n    pass"
    )
    assert not {"simpy", "pandas", "matplotlib", "dask", "pydantic"} & loaded_after(code)


def test_validate_loads_no_plotting_or_dask():
    code = (
        "from simsched.cli.app import app\n"
        "try:\n    app(['validate', 'scenarios/noisy_neighbor.yaml'])\nexcept SystemExit:\n    pass"
    )
    loaded = loaded_after(code)
    assert "simsched" in loaded and "pydantic" in loaded  # it did the work
    assert not {"matplotlib", "dask"} & loaded


def test_the_public_api_loads_on_first_use():
    loaded = loaded_after("import simsched\nsimsched.load_scenario")
    assert "pydantic" in loaded and "simpy" not in loaded
