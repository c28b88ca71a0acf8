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
    result = simulate(make_scenario(ROWS, SERVING, admission={"enabled": False}))
    assert table_notes(result) == []
    assert "notes" not in summary_document(result)
    assert summary_document(result) == result.to_json_dict()


def test_the_json_and_summary_file_carry_the_tables_notes(tmp_path: Path, simsched_cli) -> None:
    table = simsched_cli("scenario", SCENARIO)
    printed = json.loads(simsched_cli("scenario", SCENARIO, "--format", "json").out)
    assert simsched_cli("scenario", SCENARIO, "--out", tmp_path / "out").code == 0
    written = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    notes = [line.removeprefix("note: ") for line in table.out.splitlines() if line[:6] == "note: "]
    assert notes  # the study sheds: its table says so
    assert printed["notes"] == written["notes"] == notes
