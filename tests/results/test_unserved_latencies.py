"""Requests that were not served have no latency: empty (NaN) in every output, never 0."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import simsched
from simsched.outputs.files import write_result

NOISY = Path(__file__).resolve().parents[2] / "scenarios" / "noisy_neighbor.yaml"
LATENCIES = ["ttft_ms", "tpot_ms", "e2e_ms"]


def test_shed_rows_have_empty_latencies_in_the_frame_and_requests_csv(tmp_path: Path) -> None:
    scenario = simsched.load_scenario(NOISY)
    result = simsched.simulate(scenario, ["service_token_drr_with_admission"])
    requests = result.requests
    shed = requests["status_code"] != 200
    assert shed.sum() > 0
    assert requests.loc[shed, LATENCIES].isna().all().all()
    assert requests.loc[~shed, "ttft_ms"].notna().all()
    # a pandas median over a tenant's rows is the median of what it was served
    rag = requests[requests["tenant_id"] == "tenant_batch_rag"]
    served = rag.loc[rag["status_code"] == 200, "ttft_ms"]
    assert rag["ttft_ms"].median() == served.median() > 0
    write_result(result, tmp_path / "out")
    written = pd.read_csv(tmp_path / "out" / "requests.csv")
    assert written.loc[written["status_code"] != 200, LATENCIES].isna().all().all()
    # the reference summary keeps its conventions: its figures are over admitted rows only
    assert result.summaries["service_token_drr_with_admission"]["shed_429_requests"] == shed.sum()
    assert not np.isnan(result.summaries["service_token_drr_with_admission"]["batch_p99_ttft_ms"])


def test_the_table_shows_no_latency_and_no_fairness_when_nothing_was_served() -> None:
    from simsched.outputs.tables import comparison_table

    scenario = simsched.load_scenario(NOISY, ["cluster.total_kv_blocks=10"])
    result = simsched.simulate(scenario, ["service_token_drr_with_admission"])
    assert result.summaries["service_token_drr_with_admission"]["admitted_requests"] == 0
    lines = comparison_table(result).splitlines()
    for label in ("p50 TTFT ms, interactive", "p99 TTFT ms, batch", "Jain index, admitted"):
        line = next(line for line in lines if line.strip().startswith(label))
        assert line.split()[-1] == "-", line
