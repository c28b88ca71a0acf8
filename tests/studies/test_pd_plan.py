"""`plan` over pool paths: the cheapest P:D split of scenarios/disaggregated.yaml (cut to 8 s of
traffic), checked against a brute-force sweep of the same grid."""

from __future__ import annotations

from pathlib import Path

from simsched.studies.plan import plan
from simsched.studies.slo import parse_slo
from simsched.studies.sweep import sweep

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "disaggregated.yaml"
SHORT = [f"tenants.{t}.arrivals.duration_s=8" for t in ("chat", "long_prompts")]
SLOS = ["chat.p99_ttft_ms<=1000", "chat.p99_tpot_ms<=30"]
PREFILL, DECODE = "cluster.pools[prefill].replicas", "cluster.pools[decode].replicas"


def test_the_cheapest_pd_split_equals_a_brute_force_sweep() -> None:
    result = plan(SCENARIO, DECODE, "1:3", SLOS, over={PREFILL: [1, 2, 3]}, minimize="gpus",
                  overrides=SHORT, variant="pd_3p_1d", headroom=False)  # fmt: skip
    grid = {PREFILL: [1, 2, 3], DECODE: [1, 2, 3]}
    only_pd = 'variants=[{"name": "pd_3p_1d", "set": {}}]'  # the co-located one sets the pools
    table = sweep(SCENARIO, grid, overrides=[*SHORT, only_pd], progress=False)
    slos = [parse_slo(s) for s in [*SLOS, "all.shed_rate<=0.001"]]
    meeting = {}
    for (prefill, decode), part in table.groupby([PREFILL, DECODE]):
        rows = {row.tenant: row for row in part.itertuples()}
        if all(slo.met(float(getattr(rows[slo.target], slo.metric))) for slo in slos):
            meeting[(prefill, decode)] = prefill + decode  # H100s, one GPU per replica
    fewest = min(meeting.values())
    cheapest = {split for split, gpus in meeting.items() if gpus == fewest}
    answer = (dict(result.best.combo)[PREFILL], result.answer)
    assert answer in cheapest
    assert result.best.gpus == fewest
