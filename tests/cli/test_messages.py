"""Messages that say what to fix, and exit statuses that say how a run ended (issue 10)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from simsched.cli.app import main

REPO = Path(__file__).resolve().parents[2]
NOISY = str(REPO / "scenarios" / "noisy_neighbor.yaml")


def run_main(monkeypatch, capsys, *args: str) -> tuple[int | str | None, str, str]:
    monkeypatch.setattr(sys, "argv", ["simsched", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def one_line(err: str) -> str:
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    return err.rstrip("\n")


def test_scenario_refuses_a_set_that_a_variant_overrides(monkeypatch, capsys) -> None:
    code, out, err = run_main(
        monkeypatch, capsys, "scenario", NOISY, "--set", "admission.enabled=true"
    )
    assert code == 2 and out == ""
    line = one_line(err)
    assert "--set admission.enabled=true: variant 'request_count_no_admission' sets" in line
    # the variant that leaves the setting alone runs
    code, out, err = run_main(
        monkeypatch,
        capsys,
        "scenario",
        NOISY,
        "--set",
        "admission.enabled=true",
        "--variant",
        "service_token_drr_with_admission",
    )
    assert code in (0, None), err
