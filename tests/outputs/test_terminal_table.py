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
