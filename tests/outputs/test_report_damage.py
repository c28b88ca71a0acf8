"""Issue 10 item 13: `report` over damaged results is one line; odd tenant ids plot as text.

Text in a numeric column, a summary.json that is not an object, a tenant listed twice, or
non-numeric sweep metrics used to end in a traceback; a tenant id like `$x^$` was read by
matplotlib as mathematics and failed to parse.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from simsched.config.loading import load_scenario
from simsched.errors import InputError
from simsched.outputs.files import write_result
from simsched.outputs.report import report
from simsched.results.simulate import simulate

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "scenarios" / "noisy_neighbor.yaml"
MATH = "$x^$"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("results") / "out"
    scenario = load_scenario(STUDY, [f"tenants.0.id={MATH}"])
    write_result(simulate(scenario, ["service_token_drr_with_admission"]), folder)
    return folder


def _damaged(results: Path, tmp_path: Path, file: str, change) -> Path:
    folder = tmp_path / "damaged"
    shutil.copytree(results, folder)
    path = folder / file
    if file.endswith(".csv"):
        frame = pd.read_csv(path)
        change(frame)
        frame.to_csv(path, index=False)
    else:
        path.write_text(change)
    return folder


def test_a_mathtext_tenant_id_plots_as_text(results: Path, tmp_path: Path) -> None:
    index = report(results, tmp_path / "report") / "index.html"
    assert index.is_file()


@pytest.mark.parametrize(
    ("file", "column"),
    [
        ("requests.csv", "ttft_ms"),
        ("requests.csv", "dispatch_ms"),
        ("timeline.csv", "time_ms"),
        ("timeline.csv", "kv_blocks_used"),
        ("tenants.csv", "weight"),
    ],
)
def test_text_in_a_numeric_column(results: Path, tmp_path: Path, file: str, column: str) -> None:
    def change(frame: pd.DataFrame) -> None:
        frame[column] = frame[column].astype(object)
        frame.loc[frame.index[-1], column] = "oops"

    folder = _damaged(results, tmp_path, file, change)
    with pytest.raises(InputError, match=column):
        report(folder, tmp_path / "report")
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize(
    "text", ["[1, 2]\n", '{"slo": 5}\n', '{"slo": {"service_token_drr_with_admission": 3}}\n']
)
def test_a_summary_that_is_not_an_object(results: Path, tmp_path: Path, text: str) -> None:
    folder = _damaged(results, tmp_path, "summary.json", text)
    with pytest.raises(InputError, match="summary.json"):
        report(folder, tmp_path / "report")


def test_a_tenant_listed_twice(results: Path, tmp_path: Path) -> None:
    def change(frame: pd.DataFrame) -> None:
        frame["tenant_id"] = "same"

    folder = _damaged(results, tmp_path, "tenants.csv", change)
    with pytest.raises(InputError, match="tenants.csv"):
        report(folder, tmp_path / "report")


def _sweep_rows(shed=lambda point, tenant: 1) -> list[dict]:
    rows = []
    for point, seed in ((0, 1), (1, 2)):
        for tenant in (MATH, "b"):
            rows.append({"point": point, "seed": seed, "variant": "v", "tenant": tenant,
                         "p99_ttft_ms": 10.0 + point, "shed": shed(point, tenant),
                         "error": None})  # fmt: skip
    return rows


def test_a_sweep_with_mathtext_tenants(tmp_path: Path) -> None:
    table = tmp_path / "sweep.csv"
    pd.DataFrame(_sweep_rows()).to_csv(table, index=False)
    index = report(table, tmp_path / "report") / "index.html"
    assert json.dumps(index.read_text()) and index.is_file()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_text_in_a_sweep_metric_is_refused_by_line(tmp_path: Path, suffix: str) -> None:
    # One text cell among numbers used to end in a pyarrow ArrowInvalid traceback.
    rows = _sweep_rows(lambda point, tenant: "many" if (point, tenant) == (1, "b") else 3)
    table = tmp_path / f"sweep{suffix}"
    frame = pd.DataFrame(rows)
    frame.to_csv(table, index=False) if suffix == ".csv" else frame.astype(
        {"shed": str}).to_parquet(table)  # fmt: skip
    where = "line 5" if suffix == ".csv" else "row 4"
    with pytest.raises(InputError, match=f"{where}: shed 'many' is not a number"):
        report(table, tmp_path / "report")
    assert not (tmp_path / "report").exists()


def test_a_repeated_sweep_column_is_refused(tmp_path: Path) -> None:
    table = tmp_path / "sweep.csv"
    text = pd.DataFrame(_sweep_rows()).to_csv(index=False)
    header, rest = text.split("\n", 1)
    table.write_text(header.replace("p99_ttft_ms", "shed") + "\n" + rest)
    with pytest.raises(InputError, match="header: column 'shed' is named twice"):
        report(table, tmp_path / "report")


def test_a_repeated_results_column_is_refused(results: Path, tmp_path: Path) -> None:
    folder = tmp_path / "damaged"
    shutil.copytree(results, folder)
    path = folder / "tenants.csv"
    header, rest = path.read_text().split("\n", 1)
    names = header.split(",")
    path.write_text(",".join([*names[:-1], names[1]]) + "\n" + rest)
    with pytest.raises(InputError, match="named twice"):
        report(folder, tmp_path / "report")


def test_a_deeply_nested_summary_is_refused(results: Path, tmp_path: Path) -> None:
    folder = _damaged(results, tmp_path, "summary.json", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="summary.json: cannot read"):
        report(folder, tmp_path / "report")
