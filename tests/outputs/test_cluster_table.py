"""The console table's replica rows and its notes: warned routers, skew, no gateway backlog."""

from __future__ import annotations

import pandas as pd

from simsched.config.loading import validate
from simsched.outputs.cluster_table import NO_BACKLOG, PD_TTFT_NOTE, PREFILL_TTFT_ROW
from simsched.outputs.tables import comparison_table
from simsched.results.backlog import had_backlog
from simsched.results.simulate import simulate


def waits(rows: list[tuple[str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["tenant_id", "arrival_ms", "queue_wait_ms"])


def test_a_backlog_needs_two_tenants_waiting_at_once() -> None:
    assert not had_backlog(waits([("a", 0, 0), ("b", 0, 0)]))  # nobody waited
    assert not had_backlog(waits([("a", 0, 5), ("a", 1, 5)]))  # one tenant: nothing to choose
    assert not had_backlog(waits([("a", 0, 5), ("b", 5, 5)]))  # b arrives as a leaves
    assert had_backlog(waits([("a", 0, 5), ("b", 4, 1)]))  # both wait over [4, 5)
    assert had_backlog(waits([("a", 0, 100), ("a", 1, 1), ("b", 50, 1)]))


def dispatched(rows: list[tuple[str, float, float, float]]) -> pd.DataFrame:
    """(tenant, arrival, queue wait as recorded: rounded to 0.01 ms, exact dispatch or NaN)."""
    return pd.DataFrame(rows, columns=["tenant_id", "arrival_ms", "queue_wait_ms", "dispatch_ms"])


def test_a_tie_at_one_instant_is_judged_on_the_exact_dispatch() -> None:
    # a leaves at exactly 10.0 as b arrives: no overlap. Its recorded wait, 9.999 rounded to
    # 10.0, puts the end at 10.001, which would overlap b's wait.
    assert not had_backlog(dispatched([("a", 0.001, 10.0, 10.0), ("b", 10.0, 5.0, 15.0)]))
    # b waits 0.004 ms (recorded as 0.0) while a is queued [0, 100): two tenants at once
    assert had_backlog(dispatched([("a", 0.0, 100.0, 100.0), ("b", 50.0, 0.0, 50.004)]))
    # shed while queued (no dispatch): the recorded wait is all there is; [0, 5) and [4, 6)
    nan = float("nan")
    assert had_backlog(dispatched([("a", 0.0, 5.0, nan), ("b", 4.0, 2.0, 6.0)]))


def two_policies(rate_per_s: float, replicas: int = 1):
    tenants = [
        {"id": t, "arrivals": {"kind": "poisson", "rate_per_s": rate_per_s, "duration_s": 5},
         "prefill_tokens": 400, "decode_tokens": 40}
        for t in ("a", "b")
    ]  # fmt: skip
    raw = {
        "tenants": tenants,
        "cluster": {"service_model": "continuous_batching", "replicas": replicas,
                    "max_waiting_per_replica": 2},
        "admission": {"enabled": False},
        "variants": [{"name": "drr", "set": {"scheduler.policy": "service_token_drr"}},
                     {"name": "fifo", "set": {"scheduler.policy": "request_count_fifo"}}],
    }  # fmt: skip
    return simulate(validate(raw, "p.yaml"))


def test_policy_only_variants_without_a_backlog_say_so() -> None:
    light = two_policies(rate_per_s=2)  # a request every 500 ms per tenant: nothing queues
    table = comparison_table(light)
    assert f"note: {NO_BACKLOG}" in table
    assert "replicas (each | cluster)" in table and "requests per replica" in table
    heavy = two_policies(rate_per_s=200)  # 2,000 requests on one replica seating 2 waiting
    assert f"note: {NO_BACKLOG}" not in comparison_table(heavy)


def test_a_warned_router_and_skewed_load_get_notes() -> None:
    tenant = {"id": "a", "arrivals": {"kind": "periodic", "interval_ms": 1, "count": 5},
              "prefill_tokens": 10, "decode_tokens": 400}  # fmt: skip
    # a prefix scorer alone, with one shared prompt, keeps sending requests to the replica that
    # holds it once its first request has been prefilled
    raw = {"tenants": [tenant | {"prefix": {"tokens": 64}}],
           "cluster": {"service_model": "continuous_batching", "replicas": 3, "router": "least_kv",
                       "prefix_caching": True}}  # fmt: skip
    table = comparison_table(simulate(validate(raw, "w.yaml")))
    assert "note: cluster.router=least_kv: waiting requests hold no KV blocks" in table
    cached = raw | {"cluster": raw["cluster"] | {"router": {"scorers": [{"name": "prefix_cache"}]}}}
    result = simulate(validate(cached, "s.yaml"))
    counts = result.requests["replica"].value_counts().reindex(range(3), fill_value=0)
    skew = counts.max() / counts.mean()  # from the requests' own replica column
    assert skew > 1.5
    assert f"load is skewed across replicas: the busiest took {skew:.2f}x the mean" in (
        comparison_table(result)
    )


def test_the_report_has_a_utilisation_table_per_replica(tmp_path) -> None:
    from simsched.outputs.files import write_result
    from simsched.outputs.report import write_report
    from simsched.outputs.report.data import read_results_folder
    from simsched.outputs.report.utilisation_table import HEADING, utilisation_tables

    result = two_policies(rate_per_s=2, replicas=2)
    page = (write_report(result, tmp_path / "r") / "index.html").read_text()
    assert "Utilisation per replica" in page and "<td>cluster</td>" in page
    usage = result.utilisation["fifo"]["total"]
    assert f"<td>{usage['busy_share']}</td>" in page
    # The same section from a results folder: `report` draws a folder's page with the same
    # function from what it reads back, so the table read back must be the one on this page
    # (drawing the folder's report again would cost its plots, a second or so each).
    write_result(result, tmp_path / "out")
    [(heading, table)] = utilisation_tables(read_results_folder(tmp_path / "out").utilisation)
    assert heading == HEADING and "cluster" in set(table["replica"])
    assert table.to_html(index=False, na_rep="") in page


def test_a_scheduler_policy_flow_control_does_not_use_gets_a_note() -> None:
    tenant = {"id": "a", "arrivals": {"kind": "periodic", "interval_ms": 10, "count": 3},
              "prefill_tokens": 10, "decode_tokens": 2}  # fmt: skip
    raw = {
        "tenants": [tenant],
        "flow_control": {"fairness": "las"},
        "variants": [
            {"name": "drr", "set": {"scheduler.policy": "service_token_drr"}},
            {"name": "fifo", "set": {"scheduler.policy": "request_count_fifo"}},
        ],
    }
    table = comparison_table(simulate(validate(raw, "f.yaml")))
    assert "note: scheduler.policy differs between variants drr, fifo but none uses it" in table
    raw["flow_control"] = {"fairness": "scheduler"}
    assert "none uses it" not in comparison_table(simulate(validate(raw, "f.yaml")))


def test_the_pd_note_names_the_prefill_side_row_it_points_to() -> None:
    # the note prints below every tenant's block (and in the report, with no table at all), so
    # "the row above" points nowhere: it names the row of the KV transfer block instead
    assert PREFILL_TTFT_ROW.strip() in PD_TTFT_NOTE
    assert "row above" not in PD_TTFT_NOTE
