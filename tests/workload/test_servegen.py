"""ServeGen importer: per-client rate series and PMFs into a multi-tenant scenario mapping."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from simsched.config.loading import load_scenario, validate
from simsched.errors import InputError
from simsched.workload.servegen import import_servegen, write_scenario_yaml

REPO = Path(__file__).resolve().parents[2]
SERVEGEN = REPO.parent / "shared" / "data" / "traces" / "servegen" / "language_m-small"

GRID = [0, 600, 1200, 1800]
# client -> (rates, cvs); client 4 is idle throughout
RATES = {
    0: ([1, 2, 0, 1], [1.5, 2, 0, 1.2]),
    1: ([5, 5, 5, 5], [1, 1, 1, 1]),
    2: ([0.5, 0, 0, 0.5], [3, 0, 0, 1]),
    3: ([0.5, 0.5, 0, 0.25], [1, 1, 0, 2]),
    4: ([0, 0, 0, 0], [0, 0, 0, 0]),
}
# client -> {window: (input PMF literal, output PMF literal)}; client 1 has no dataset file
DATASETS = {
    0: {0: ("{10: 0.5, 20: 0.5}", "{1: 1.0}"), 1200: ("{30: 1.0}", "{2: 1.0}")},
    2: {0: ("{}", "{}"), 1200: ("{100: 1.0}", "{7: 1.0}")},
    3: {0: ("{200: 1.0}", "{9: 1.0}"), 1200: ("{}", "{}")},
    4: {0: ("{5: 1.0}", "{5: 1.0}"), 1200: ("{5: 1.0}", "{5: 1.0}")},
}


def make_folder(root: Path, rates=RATES, datasets=DATASETS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for client, (rate, cv) in rates.items():
        rows = [
            f"{t},{r},{c},{'Gamma' if r else ''},{1 if r else 0},{1 if r else 0}"
            for t, r, c in zip(GRID, rate, cv, strict=True)
        ]
        (root / f"chunk-{client}-trace.csv").write_text("\r\n".join(rows) + "\r\n")
    for client, windows in datasets.items():
        data = {str(t): {"input_tokens": i, "output_tokens": o} for t, (i, o) in windows.items()}
        (root / f"chunk-{client}-dataset.json").write_text(json.dumps(data))
    return root


def tenants_by_id(mapping: dict) -> dict[str, dict]:
    return {t["id"]: t for t in mapping["tenants"]}


def pmf(spec: dict) -> dict[int, float]:
    assert spec["dist"] == "empirical"
    assert spec["values"] == sorted(spec["values"])
    return dict(zip(spec["values"], spec["weights"], strict=True))


def test_top_clients_and_long_tail(tmp_path):
    mapping = import_servegen(make_folder(tmp_path / "sg"), top=2)
    tenants = tenants_by_id(mapping)
    assert list(tenants) == ["client_1", "client_0", "long_tail"]  # busiest first; 4 is idle
    assert tenants["client_0"]["arrivals"] == {
        "kind": "rate_schedule",
        "points": [[0, 1.0, 1.5], [600, 2.0, 2.0], [1200, 0.0, 1.0], [1800, 1.0, 1.2]],
        "interpolation": "step",
        "duration_s": 2400.0,
    }
    tail = tenants["long_tail"]["arrivals"]["points"]
    assert [p[1] for p in tail] == [1.0, 0.5, 0.0, 0.75]  # clients 2 and 3 summed
    # rate-weighted CV: (0.5*3 + 0.5*1)/1, only client 3, idle, (0.5*1 + 0.25*2)/0.75
    assert [p[2] for p in tail] == pytest.approx([2.0, 1.0, 1.0, 4 / 3])
    for tenant in mapping["tenants"]:
        assert (tenant["weight"], tenant["priority"]) == (1.0, "interactive")
        assert "quota" not in tenant
    assert set(mapping) == {"name", "description", "tenants"}
    assert "ServeGen" in mapping["description"] and "NSDI 2026" in mapping["description"]
    assert "long_tail merges clients 2, 3" in mapping["description"]


def test_lengths_average_overlapping_windows_by_requests(tmp_path):
    tenants = tenants_by_id(import_servegen(make_folder(tmp_path / "sg"), top=2))
    # client 0: window 0 carries 3 of its 4 requests, window 1200 the other one
    assert pmf(tenants["client_0"]["prefill_tokens"]) == pytest.approx(
        {10: 0.375, 20: 0.375, 30: 0.25}
    )
    assert pmf(tenants["client_0"]["decode_tokens"]) == pytest.approx({1: 0.75, 2: 0.25})
    # long tail: client 2 (1 request-share) and client 3 (1.25), each one non-empty window
    assert pmf(tenants["long_tail"]["prefill_tokens"]) == pytest.approx(
        {100: 1 / 2.25, 200: 1.25 / 2.25}
    )
    assert pmf(tenants["long_tail"]["decode_tokens"]) == pytest.approx(
        {7: 1 / 2.25, 9: 1.25 / 2.25}
    )


def test_client_without_dataset_borrows_the_pool_of_the_others(tmp_path):
    tenants = tenants_by_id(import_servegen(make_folder(tmp_path / "sg"), top=2))
    # client_0 (4 units of requests) and long_tail (2.25) pooled by request share
    share0, share_tail = 4 / 6.25, 2.25 / 6.25
    expected = {
        10: 0.375 * share0,
        20: 0.375 * share0,
        30: 0.25 * share0,
        100: share_tail / 2.25,
        200: share_tail * 1.25 / 2.25,
    }
    assert pmf(tenants["client_1"]["prefill_tokens"]) == pytest.approx(expected)


def test_window_selection_scale_and_nearest_dataset_window(tmp_path):
    folder = make_folder(tmp_path / "sg")
    mapping = import_servegen(folder, top=1, start_window=3, windows=1, rate_scale=2.0, name="x")
    tenants = tenants_by_id(mapping)
    assert mapping["name"] == "x" and "scaled by 2" in mapping["description"]
    assert list(tenants) == ["client_1", "long_tail"]
    assert tenants["client_1"]["arrivals"]["points"] == [[0, 10.0, 1.0]]
    assert tenants["client_1"]["arrivals"]["duration_s"] == 600.0
    [[t, rate, cv]] = tenants["long_tail"]["arrivals"]["points"]
    assert (t, rate) == (0, 3.5)  # (1 + 0.5 + 0.25) * 2
    assert cv == pytest.approx((1 * 1.2 + 0.5 * 1 + 0.25 * 2) / 1.75)
    # clients 0 and 2 use window 1200's data; client 3's only data (window 0) ends before the
    # span, so it is the nearest earlier one
    assert pmf(tenants["long_tail"]["prefill_tokens"]) == pytest.approx(
        {30: 1 / 1.75, 100: 0.5 / 1.75, 200: 0.25 / 1.75}
    )


def test_later_window_numbers_and_zero_weight_windows(tmp_path):
    mapping = import_servegen(make_folder(tmp_path / "sg"), top=1, start_window=1, windows=2)
    tenants = tenants_by_id(mapping)
    assert tenants["client_1"]["arrivals"]["points"] == [[0, 5.0, 1.0], [600, 5.0, 1.0]]
    # client 0 sends nothing in window 1200, so that window's PMF carries no weight
    assert pmf(tenants["long_tail"]["prefill_tokens"]) == pytest.approx(
        {10: 0.4, 20: 0.4, 200: 0.2}
    )


def test_output_validates_and_round_trips_through_yaml(tmp_path):
    mapping = import_servegen(make_folder(tmp_path / "sg"), top=2)
    scenario = validate(mapping, "x.yaml")
    assert [t.id for t in scenario.tenants] == ["client_1", "client_0", "long_tail"]
    out = write_scenario_yaml(mapping, tmp_path / "imported.yaml")
    assert yaml.safe_load(out.read_text()) == mapping
    assert load_scenario(out).tenants[2].id == "long_tail"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["imported.yaml", "sg"]  # no temp left


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"top": 0}, "top: must be at least 1"),
        ({"top": 1, "rate_scale": 0}, "rate_scale: must be greater than 0"),
        ({"top": 1, "start_window": 3, "windows": 2}, "windows 3..4 are outside the data (0..3)"),
        ({"top": 1, "start_window": 4}, "start_window: 4 is outside the data (0..3)"),
        ({"top": 1, "windows": 0}, "windows: must be at least 1"),
        ({"top": 1, "start_window": -1, "windows": 1}, "outside the data"),
    ],
)
def test_bad_arguments(tmp_path, arguments, expected):
    with pytest.raises(InputError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        import_servegen(make_folder(tmp_path / "sg"), **arguments)


def test_bad_folders(tmp_path):
    with pytest.raises(InputError, match="no such folder"):
        import_servegen(tmp_path / "missing", top=1)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="holds no chunk-N-trace.csv files"):
        import_servegen(tmp_path / "empty", top=1)
    idle = make_folder(tmp_path / "idle", rates={4: RATES[4]})
    with pytest.raises(InputError, match="no client sends requests"):
        import_servegen(idle, top=1)
    no_data = make_folder(tmp_path / "nodata", rates={1: RATES[1]}, datasets={})
    with pytest.raises(InputError, match="no dataset file has token lengths"):
        import_servegen(no_data, top=1)


def test_bad_files(tmp_path):
    folder = make_folder(tmp_path / "grid")
    (folder / "chunk-9-trace.csv").write_text("0,1,1,Gamma,1,1\n700,1,1,Gamma,1,1\n")
    with pytest.raises(InputError, match="chunk-9-trace.csv: its windows differ"):
        import_servegen(folder, top=1)
    folder = make_folder(tmp_path / "rate")
    (folder / "chunk-0-trace.csv").write_text("0,1,1,,0,0\n600,x,1,,0,0\n1200,1,1,,0,0\n")
    with pytest.raises(InputError, match=r"chunk-0-trace.csv line 2: bad window start or rate"):
        import_servegen(folder, top=1)
    folder = make_folder(tmp_path / "pmf", datasets={0: {0: ("{10: 'a'}", "{1: 1.0}")}})
    with pytest.raises(InputError, match=r"chunk-0-dataset.json: 0.input_tokens: must map"):
        import_servegen(folder, top=1)
    folder = make_folder(tmp_path / "literal", datasets={0: {0: ("{10: 0.5", "{1: 1.0}")}})
    with pytest.raises(InputError, match="0.input_tokens: not a Python dict literal"):
        import_servegen(folder, top=1)
    folder = make_folder(tmp_path / "json")
    (folder / "chunk-0-dataset.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="chunk-0-dataset.json: not a ServeGen dataset file"):
        import_servegen(folder, top=1)


def test_real_language_m_small():
    if not SERVEGEN.is_dir():
        pytest.skip("ServeGen data not present")
    start, count = 1000, 6
    mapping = import_servegen(SERVEGEN, top=3, start_window=start, windows=count)
    ids = [t["id"] for t in mapping["tenants"]]
    assert len(ids) == 4 and ids[-1] == "long_tail"
    rates = {}
    for path in SERVEGEN.glob("chunk-*-trace.csv"):
        with path.open(newline="") as handle:
            rows = list(csv.reader(handle))[start : start + count]
        rates[f"client_{path.name.split('-')[1]}"] = [float(row[1]) for row in rows]
    totals = {cid: sum(r) for cid, r in rates.items()}
    assert ids[:3] == sorted(totals, key=lambda c: -totals[c])[:3]
    for tenant in mapping["tenants"][:3]:
        assert [p[1] for p in tenant["arrivals"]["points"]] == rates[tenant["id"]]
    tail = [p[1] for p in mapping["tenants"][3]["arrivals"]["points"]]
    others = [r for cid, r in rates.items() if cid not in ids]
    assert tail == pytest.approx([sum(window) for window in zip(*others, strict=True)])
    assert validate(mapping, "x.yaml").tenants[3].arrivals.duration_s == count * 600
