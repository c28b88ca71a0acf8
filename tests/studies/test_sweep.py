"""Sweeps: the same table whatever runs it, failing points isolated, bad grids rejected.

Every sweep here runs the small noisy-neighbor study over a few points. One grid value
(`admission.batch_kv_watermark=0.95`, above the interactive watermark 0.90) is invalid by
construction, so the points holding it must fail alone.
"""

from __future__ import annotations

import importlib
import io
from pathlib import Path

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from simsched.cli.studies import register
from simsched.config.classes import CLASS_NAMES
from simsched.errors import InputError
from simsched.outputs.progress import ProgressLine, render
from simsched.outputs.sweep_table import read_table, write_table
from simsched.results.tenants import ALL, COUNT_METRICS, SESSION_COUNTS
from simsched.studies.grid import parse_grid, split_values
from simsched.studies.sweep import sweep

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "noisy_neighbor.yaml"
# the module, even once the package exports the function `sweep` under the same name
sweep_module = importlib.import_module("simsched.studies.sweep")
GRID = {"cluster.total_kv_blocks": [1200, 2400], "admission.batch_kv_watermark": [0.5, 0.95]}
VARIANTS = ["request_count_no_admission", "service_token_drr_with_admission"]
TENANTS = ["tenant_chat_pro", "tenant_ide_assist", "tenant_batch_rag", ALL, *CLASS_NAMES]


@pytest.fixture(scope="module")
def local() -> pd.DataFrame:
    return sweep(SCENARIO, GRID, jobs=1, progress=False)


def test_same_table_with_one_job_or_two(local: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(sweep(SCENARIO, GRID, jobs=2, progress=False), local)


def test_rows_per_point_variant_and_tenant(local: pd.DataFrame) -> None:
    ok = local[local["error"].isna()]
    assert list(ok["point"].unique()) == [0, 2]  # the cartesian product, last axis fastest
    per_point = ok[ok["point"] == 0]
    assert list(per_point["variant"]) == [v for v in VARIANTS for _ in TENANTS]
    assert list(per_point["tenant"]) == TENANTS * len(VARIANTS)
    assert list(ok["cluster.total_kv_blocks"].unique()) == [1200, 2400]
    assert (ok["seed"] == 1).all()  # the scenario's own seed


def test_all_row_adds_up_the_tenants(local: pd.DataFrame) -> None:
    ok = local[local["error"].isna()]
    for (_, _), rows in ok.groupby(["point", "variant"]):
        tenants = rows[~rows["tenant"].isin([ALL, *CLASS_NAMES])]
        overall = rows[rows["tenant"] == ALL].iloc[0]
        classes = rows[rows["tenant"].isin(CLASS_NAMES)]  # the classes pool the same requests
        # turn counts are blank without session tenants (this study has none)
        counts = [c for c in COUNT_METRICS if not pd.isna(overall[c])]
        assert set(COUNT_METRICS) - set(counts) == set(SESSION_COUNTS)
        assert rows[SESSION_COUNTS].isna().all().all()
        for column in counts:
            assert classes[column].sum() == pytest.approx(overall[column], abs=1e-3), column
        for column in [*counts, "goodput_rps"]:
            assert tenants[column].sum() == pytest.approx(overall[column], abs=1e-3), column
        assert (
            overall["peak_dispatch_kv_occupancy_ratio"]
            == tenants["peak_dispatch_kv_occupancy_ratio"].max()
        )


def test_more_kv_sheds_fewer_batch_requests(local: pd.DataFrame) -> None:
    rows = local[(local["variant"] == VARIANTS[1]) & (local["tenant"] == "tenant_batch_rag")]
    sheds = rows.set_index("cluster.total_kv_blocks")["shed_kv_watermark"]
    assert sheds[1200] > sheds[2400] > 0


def test_failing_point_is_isolated(local: pd.DataFrame) -> None:
    failed = local[local["error"].notna()]
    assert list(failed["point"]) == [1, 3]
    assert (failed["admission.batch_kv_watermark"] == 0.95).all()
    assert failed["variant"].isna().all() and failed["p99_ttft_ms"].isna().all()
    message = failed["error"].iloc[0]
    assert message.startswith(f"{SCENARIO}: --grid admission.batch_kv_watermark=0.95: ")
    assert "must not exceed interactive_kv_watermark" in message


# slow: starts a dask LocalCluster (with worker processes in one case).
@pytest.mark.slow
@pytest.mark.parametrize("processes", [False, True])  # threads, then pickled tasks
def test_dask_local_cluster_gives_the_local_table(local: pd.DataFrame, processes: bool) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, processes=processes, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        table = sweep(SCENARIO, GRID, dask_address=cluster.scheduler_address, progress=False)
    pd.testing.assert_frame_equal(table, local)


def test_seeds_replicate_each_point_with_consecutive_seeds() -> None:
    table = sweep(SCENARIO, {"cluster.total_kv_blocks": [1600]}, seeds=3, jobs=1, progress=False)
    assert list(table.groupby("point")["seed"].first()) == [1, 2, 3]
    swept = sweep(SCENARIO, {"seed": [10, 20]}, seeds=2, jobs=1, progress=False)
    assert list(swept.groupby("point")["seed"].first()) == [10, 11, 20, 21]
    assert "seed" in swept.columns and list(swept.columns).count("seed") == 1


def test_zipped_values_vary_together() -> None:
    zipped = {"cluster.total_kv_blocks": [1200, 2400], "admission.batch_kv_watermark": [0.5, 0.6]}
    table = sweep(SCENARIO, {}, zip_=zipped, jobs=1, progress=False)
    pairs = table.groupby("point")[["cluster.total_kv_blocks", "admission.batch_kv_watermark"]]
    assert pairs.first().values.tolist() == [[1200, 0.5], [2400, 0.6]]


def test_progress_callback_counts_every_point() -> None:
    calls: list[tuple[int, int]] = []
    sweep(
        SCENARIO,
        {"cluster.total_kv_blocks": [1200, 2400]},
        jobs=1,
        progress=lambda *a: calls.append(a),
    )
    assert calls == [(0, 2), (1, 2), (2, 2)]


@pytest.mark.parametrize(
    ("grid", "zip_", "expected"),
    [
        ({"cluster.total_kv_blockz": [1, 2]}, None, "--grid cluster.total_kv_blockz=1: cluster"),
        ({"cluster..x": [1]}, None, "--grid cluster..x: malformed path"),
        ({"cluster.total_kv_blocks": []}, None, "no values"),
        ({}, {"seed": [1, 2], "cluster.total_kv_blocks": [1]}, "as many values each"),
        ({"tenants.nobody.weight": [1]}, None, "no element with id or name 'nobody'"),
    ],
)
def test_bad_grids_fail_the_sweep(grid, zip_, expected: str) -> None:
    with pytest.raises(InputError, match=expected.replace(".", r"\.")):
        sweep(SCENARIO, grid, zip_=zip_, jobs=1, progress=False)


def test_bad_job_counts_and_unreachable_dask(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError, match="--jobs: must be at least 1"):
        sweep(SCENARIO, {"seed": [1]}, jobs=0, progress=False)
    monkeypatch.setattr(sweep_module, "DASK_CONNECT_TIMEOUT_S", 0.5)
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        sweep(SCENARIO, {"seed": [1]}, dask_address="tcp://127.0.0.1:9", progress=False)
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        sweep(SCENARIO, {"seed": [1]}, dask_address="not an address", progress=False)


def test_parse_grid() -> None:
    assert parse_grid(["a.b=1,2.5,x", "c=[1,2],[3]"], "--grid") == {
        "a.b": [1, 2.5, "x"],
        "c": [[1, 2], [3]],
    }
    assert split_values("'a,b',c") == ["'a,b'", "c"]
    for bad, message in [("a.b", "expected PATH=VALUE"), ("a=1,,2", "empty value")]:
        with pytest.raises(InputError, match=message):
            parse_grid([bad], "--grid", "x.yaml")
    with pytest.raises(InputError, match="swept twice"):
        parse_grid(["a=1", "a=2"], "--grid")


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_tables_round_trip(local: pd.DataFrame, tmp_path: Path, suffix: str) -> None:
    path = write_table(local, tmp_path / f"out{suffix}")
    back = read_table(path)
    assert list(back.columns) == list(local.columns) and len(back) == len(local)
    assert back["p99_ttft_ms"].equals(local["p99_ttft_ms"].astype(float))
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no staging file left
    with pytest.raises(InputError, match="must end in .parquet or .csv"):
        write_table(local, tmp_path / "out.xlsx")


def test_cli_sweep_writes_the_table(tmp_path: Path) -> None:
    app = typer.Typer()
    register(app)
    out = tmp_path / "results.csv"
    args = ["sweep", str(SCENARIO), "--grid", "cluster.total_kv_blocks=1200,2400"]
    result = CliRunner().invoke(app, [*args, "--jobs", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output == f"2 points, 0 failed; 24 rows written to {out}\n"  # no progress: no TTY
    assert list(read_table(out)["cluster.total_kv_blocks"].unique()) == [1200, 2400]
    bad = CliRunner().invoke(app, [*args[:3], "cluster.total_kv_blocks", "--out", str(out)])
    assert isinstance(bad.exception, InputError)


def test_progress_line_only_on_a_terminal() -> None:
    piped = io.StringIO()
    line = ProgressLine("sweep", stream=piped)
    line(1, 4)
    line.message("probe")
    line.close()
    assert piped.getvalue() == ""
    terminal = io.StringIO()
    line = ProgressLine("sweep", stream=terminal, clock=iter([0.0, 10.0]).__next__, enabled=True)
    line(1, 4)
    line.close()
    assert terminal.getvalue() == "\r" + render("sweep", 1, 4, 10.0) + "\n"
    assert render("sweep", 1, 4, 10.0).endswith("1/4  25%  0:10 elapsed, ETA 0:30")
