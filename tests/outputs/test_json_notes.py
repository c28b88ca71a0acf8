"""`--format json` and `--out`'s summary.json say in words what the table's notes say: a script
reading the JSON must learn that latency covers admitted requests only (and the rest) as a reader
of the table does."""

from __future__ import annotations

import json
from pathlib import Path

from simsched.outputs.cluster_table import table_notes
from simsched.outputs.files import summary_document
from simsched.results.simulate import simulate

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "noisy_neighbor.yaml"
ROWS = [
    ("r1", "a", 0.0, 100, 20),
    ("r2", "b", 5.0, 100, 20),
    ("r3", "a", 10.0, 100, 20),
]
# tenant a's bucket holds 50 service tokens and each of its requests costs at least its 100
# prompt tokens: both of a's requests are shed, b's one is served (2 of 3 shed)
QUOTA = {"burst_service_tokens": 50, "sustained_service_tokens_per_sec": 1}
SHEDDING = [{"id": "a", "priority": "batch", "quota": QUOTA}, {"id": "b", "priority": "batch"}]
SERVING = [{"id": "a", "priority": "batch"}, {"id": "b", "priority": "batch"}]


def test_a_shedding_run_says_its_latency_covers_admitted_requests(make_scenario) -> None:
    document = summary_document(simulate(make_scenario(ROWS, SHEDDING)))
    admitted_only = [n for n in document["notes"] if "admitted requests only" in n]
    assert admitted_only == [
        "TTFT, TPOT, goodput and SLO rows cover admitted requests only; shed requests (429/503) "
        "have no latency and count in the shed rows (shed: 66.7%)"
    ]
    assert list(document)[-1] == "notes"  # after every figure, as the table prints them


def test_a_run_without_notes_has_no_notes_key(make_scenario) -> None:
    batching = {"service_model": "continuous_batching"}
    result = simulate(make_scenario(ROWS, SERVING, admission={"enabled": False}, cluster=batching))
    assert table_notes(result) == []
    assert "notes" not in summary_document(result)
    assert list(summary_document(result)) == [*result.to_json_dict(), "tenants"]


def test_the_json_has_each_tenants_figures_as_tenants_csv(tmp_path: Path, simsched_cli) -> None:
    import csv

    # spec_decode_load runs replicas that time tokens: its TPOT is in the JSON as in the CSV
    scenario = REPO / "scenarios" / "spec_decode_load.yaml"
    assert simsched_cli("scenario", scenario, "--out", tmp_path / "out").code == 0
    written = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    with open(tmp_path / "out" / "tenants.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == sum(len(tenants) for tenants in written["tenants"].values())
    for row in rows:
        figures = written["tenants"][row["variant"]][row["tenant_id"]]
        assert float(row["p99_tpot_ms"]) == figures["p99_tpot_ms"]
        assert float(row["goodput_rps"]) == figures["goodput_rps"]
        assert row["slo_met"] == str(figures["slo_met"]).lower()


def test_a_token_server_s_stand_in_figures_are_said_to_be_stand_ins(make_scenario) -> None:
    # the token server's finish is a stand-in: the table prints TPOT and goodput n/a, the JSON
    # keeps tenants.csv's figures (as `capacity` does) and says what they are
    result = simulate(make_scenario(ROWS, SERVING, admission={"enabled": False}))
    document = summary_document(result)
    assert set(document["tenants"]["base"]) == {"a", "b", "all"}
    assert (
        document["tenants"]["base"]["all"]["goodput_rps"]
        == (document["capacity"]["base"]["goodput_rps"])
    )
    assert document["notes"] == [
        "the token server times no tokens: TPOT, goodput and SLO attainment here (tenants, "
        "capacity) come from a stand-in finish, the end of each request's KV hold (the table "
        "prints TPOT and goodput n/a)"
    ]


def test_the_json_slo_says_whether_every_tenant_met_its_targets(make_scenario) -> None:
    # a TPOT target no request can meet: the reference's `met` (interactive TTFT) holds, while
    # every tenant misses, as the table's row says
    batching = {"service_model": "continuous_batching"}
    targets = {"interactive_ttft_ms": 1e9, "interactive_tpot_ms": 0.001}
    tenants = [{"id": "a", "priority": "interactive"}, {"id": "b", "priority": "interactive"}]
    result = simulate(make_scenario(ROWS, tenants, cluster=batching, slo=targets))
    verdict = summary_document(result)["slo"]["base"]
    assert verdict["met"] is True and verdict["every_tenant_met"] is False
    assert result.slo["base"].get("every_tenant_met") is None  # the result's own is untouched


def test_the_json_and_summary_file_carry_the_tables_notes(tmp_path: Path, simsched_cli) -> None:
    table = simsched_cli("scenario", SCENARIO)
    printed = json.loads(simsched_cli("scenario", SCENARIO, "--format", "json").out)
    assert simsched_cli("scenario", SCENARIO, "--out", tmp_path / "out").code == 0
    written = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    notes = [line.removeprefix("note: ") for line in table.out.splitlines() if line[:6] == "note: "]
    assert notes  # the study sheds: its table says so
    assert printed["notes"] == written["notes"]
    # every table note, then the JSON's own: its token server's stand-in figures
    assert printed["notes"][: len(notes)] == notes
    assert printed["notes"][len(notes) :] == [
        "the token server times no tokens: TPOT, goodput and SLO attainment here (tenants, "
        "capacity) come from a stand-in finish, the end of each request's KV hold (the table "
        "prints TPOT and goodput n/a)"
    ]
