"""The terminal table: per-token figures only where the model times tokens, and class latencies
only for classes that had an admitted request (counted per class, not by the tenant's class)."""

from __future__ import annotations

from simsched.outputs.tables import comparison_table
from simsched.results.simulate import simulate

TENANTS = [{"id": "a", "priority": "interactive"}, {"id": "b", "priority": "batch"}]
# Every request of tenant b is sent as interactive: no batch request exists at all.
ROWS = [
    ("r1", "a", 0.0, 100, 20),
    ("r2", "b", 5.0, 100, 20, "interactive"),
    ("r3", "a", 10.0, 100, 20),
]
VARIANTS = [
    {"name": "server"},
    {"name": "batching", "set": {"cluster.service_model": "continuous_batching"}},
]


def cells(table: str, label: str) -> list[list[str]]:
    """Every line whose label starts with `label`, as its cells after the label."""
    rows = [line.strip() for line in table.splitlines() if line.strip().startswith(label)]
    return [row[len(label) :].split() for row in rows]


def test_tpot_and_goodput_are_n_a_for_the_token_server_only(make_scenario) -> None:
    scenario = make_scenario(ROWS, TENANTS, variants=VARIANTS, admission={"enabled": False})
    result = simulate(scenario)
    table = comparison_table(result)
    for label in ("p99 TPOT ms", "goodput, requests/s within SLO"):
        for server, batching in cells(table, label):
            assert server == "n/a"
            assert batching != "n/a"
    tenants = result.tenants.set_index(["variant", "tenant_id"])
    # tenant a's TPOT under batching is the number shown (two decimals)
    shown = cells(table, "p99 TPOT ms")[0][1]
    assert shown == f"{tenants.loc[('batching', 'a'), 'p99_tpot_ms']:.2f}"


def test_a_class_without_admitted_requests_shows_a_dash(make_scenario) -> None:
    scenario = make_scenario(ROWS, TENANTS, admission={"enabled": False})
    result = simulate(scenario)
    assert result.facts["base"].admitted_by_class == (3, 0)
    table = comparison_table(result)
    assert cells(table, "p99 TTFT ms, batch") == [["-"]]
    assert cells(table, "p99 TTFT ms, interactive")[0] != ["-"]


def test_latency_rows_say_they_cover_admitted_requests_when_some_were_shed(make_scenario) -> None:
    from simsched.outputs.cluster_table import table_notes

    # tenant a's bucket holds 50 service tokens; each of its (batch) requests costs at least its
    # 100 prompt tokens, so both of a's requests are shed and b's one is served: 2 of 3 = 66.7%
    quota = {"burst_service_tokens": 50, "sustained_service_tokens_per_sec": 1}
    tenants = [{"id": "a", "priority": "batch", "quota": quota}, TENANTS[1]]
    result = simulate(make_scenario(ROWS, tenants))
    note = [n for n in table_notes(result) if "admitted requests only" in n]
    assert note == [
        "TTFT, TPOT, goodput and SLO rows cover admitted requests only; shed requests (429/503) "
        "have no latency and count in the shed rows (shed: 66.7%)"
    ]
    served = simulate(make_scenario(ROWS, TENANTS))
    assert not [n for n in table_notes(served) if "admitted requests only" in n]


def test_a_tpot_target_adds_the_row_that_judges_every_target(make_scenario) -> None:
    # batching times tokens: 20 output tokens take well over 0.001 ms each, and under 10 s
    batching = {"service_model": "continuous_batching"}
    rows = [("r1", "a", 0.0, 100, 20), ("r2", "b", 5.0, 100, 20), ("r3", "a", 10.0, 100, 20)]
    tenants = [{"id": "a", "priority": "interactive"}, {"id": "b", "priority": "interactive"}]
    label = "every tenant within its TTFT and TPOT targets"

    def row(**slo: float) -> list[list[str]]:
        result = simulate(make_scenario(rows, tenants, cluster=batching, slo=slo))
        return cells(comparison_table(result), label)

    assert row() == []  # no TPOT target: the TTFT verdict row says it all
    assert row(interactive_tpot_ms=10_000) == [["met"]]
    assert row(interactive_tpot_ms=0.001) == [["MISSED:", "2", "tenants"]]
    assert row(interactive_tpot_ms=0.001, interactive_ttft_ms=1e9) == [["MISSED:", "2", "tenants"]]
    # only the batch tenant b has a TPOT target it misses: it is named
    tenants[1]["priority"] = "batch"
    assert row(batch_tpot_ms=0.001) == [["MISSED:", "b"]]
