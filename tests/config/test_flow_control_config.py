"""Bad flow_control settings are one-line input errors naming the field (exit 2 at the CLI)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from simsched.cli.app import main

NOISY = Path(__file__).resolve().parents[2] / "scenarios" / "noisy_neighbor.yaml"


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("flow_control={fairness: fifo}", "flow_control.fairness"),
        ("flow_control={saturation: {detector: latency}}", "flow_control.saturation"),
        ("flow_control={saturation: {detector: utilization, refresh_ms: 0}}", "refresh_ms"),
        ("flow_control={saturation: {detector: none, hysteresis: 0.1}}", "hysteresis would do"),
        ("flow_control={priorities: {nobody: 3}}", "unknown tenant 'nobody'"),
        ("flow_control={priorities: {tenant_batch_rag: urgent}}", "flow_control.priorities"),
        ("flow_control={request_ttl_ms: -1}", "flow_control.request_ttl_ms"),
        ("flow_control={usage_limit: {min_ceiling: 0.9, max_ceiling: 0.5}}", "min_ceiling"),
        ("flow_control={bands: [{priority: 0}, {priority: 0}]}", "listed twice"),
        ("flow_control={bands: [{priority: 7, max_requests: 1}]}", "flow_control.bands: no flow"),
        (
            "flow_control={band_selection: {policy: wfq, weights: {9: 2}}}",
            "flow_control.band_selection.weights: no flow has priority 9",
        ),
    ],
)
def test_a_bad_setting_exits_2_naming_it(
    override: str, named: str, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setattr(sys, "argv", ["simsched", "validate", str(NOISY), "--set", override])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert named in lines[0]
    assert "noisy_neighbor.yaml" in lines[0]
