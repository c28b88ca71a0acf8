"""Issue 21 item 1: no command writes over a file the same run reads.

Every writer (`scenario --out` and `--report`, `workload --out`, `sweep --out` and its `.ci`
table, `plan --report`, `calibrate --out`, `report --out`) is pointed at every kind of input
(the scenario, its trace, its `hf_config`, the calibration file and its vLLM result), by the
same name, through a symlink and through a hard link. Each case is refused before anything runs:
exit 2, one line naming the output and the input, and the input's bytes and mtime untouched.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import TINY_SHAPE

CONFIG = TINY_SHAPE
SCENARIO = """name: tiny
seed: 1
cluster:
  service_model: continuous_batching
  model: {hf_config: m/config.json}
tenants:
  - id: a
trace: {path: trace.csv}
"""
TRACE = "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens\nr1,a,0,10,5\n"
CALIBRATION = """settings:
  - {path: cluster.latency_model.overhead_ms, low: 0.0, high: 5.0}
cases:
  - {name: c, scenario: s.yaml, metric: p50_ttft_ms, vllm_result: v.json}
"""
PLAN = ("--vary", "cluster.replicas", "--range", "1:2", "--slo", "all.p99_ttft_ms<=1000")


@pytest.fixture
def folder(folder: Path) -> Path:
    """conftest.py's folder, with a trace, a vLLM result and two earlier outputs."""
    (folder / "trace.csv").write_text(TRACE, encoding="utf-8")
    (folder / "v.json").write_text('{"median_ttft_ms": 40.0}', encoding="utf-8")
    (folder / "results").mkdir()
    (folder / "results" / "requests.csv").write_text("request_id\n", encoding="utf-8")
    (folder / "t.csv").write_text("point,variant,tenant\n", encoding="utf-8")
    return folder


@pytest.fixture
def no_simulation(no_simulation: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """conftest.py's guard, and no workload built either."""

    def refuse(*args, **kwargs):
        raise AssertionError("the run started before its outputs were checked")

    monkeypatch.setattr("simsched.workload.build.build_workload", refuse)


# (writer, the output file it would write, the command line with OUT for where it writes)
WRITERS: list[tuple[str, str, tuple[str, ...]]] = [
    ("scenario --out", "out/summary.json", ("scenario", "s.yaml", "--out", "out")),
    ("scenario --report", "rep/index.html", ("scenario", "s.yaml", "--report", "rep")),
    ("scenario --report png", "rep/ttft_cdf.png", ("scenario", "s.yaml", "--report", "rep")),
    ("workload --out", "w.csv", ("workload", "s.yaml", "--out", "w.csv")),
    ("sweep --out", "sw.csv", ("sweep", "s.yaml", "--grid", "seed=1,2", "--out", "sw.csv")),
    ("sweep ci table", "sw.ci.csv",
     ("sweep", "s.yaml", "--grid", "seed=1,2", "--seeds", "2", "--out", "sw.csv")),
    ("plan --report", "pr/plan_slos.png", ("plan", "s.yaml", *PLAN, "--report", "pr")),
    ("calibrate --out", "fit.yaml", ("calibrate", "cal.yaml", "--out", "fit.yaml")),
]  # fmt: skip
SCENARIO_INPUTS = ["s.yaml", "trace.csv", "m/config.json"]
CALIBRATION_INPUTS = ["cal.yaml", "v.json", "s.yaml", "trace.csv", "m/config.json"]


def _link(kind: str) -> Callable[[Path, Path], None]:
    if kind == "symlink":
        return lambda source, name: name.symlink_to(source.resolve())
    return lambda source, name: os.link(source, name)


def _cases():
    for writer, output, args in WRITERS:
        inputs = CALIBRATION_INPUTS if writer.startswith("calibrate") else SCENARIO_INPUTS
        for source in inputs:
            for kind in ("symlink", "hardlink"):
                yield pytest.param(output, args, source, kind, id=f"{writer}-{source}-{kind}")


def _state(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


@pytest.mark.parametrize(("output", "args", "source", "kind"), list(_cases()))
def test_no_writer_overwrites_an_input_through_a_link(
    folder: Path, no_simulation, output, args, source, kind, simsched_cli
) -> None:
    target = folder / output
    target.parent.mkdir(parents=True, exist_ok=True)
    _link(kind)(folder / source, target)
    before = {name: _state(folder / name) for name in CALIBRATION_INPUTS}
    code, _, err = simsched_cli(*args)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert output in err and "is the input" in err and Path(source).name in err, err
    assert {name: _state(folder / name) for name in CALIBRATION_INPUTS} == before


def test_an_output_that_is_the_input_by_name_is_refused(
    folder: Path, no_simulation, simsched_cli
) -> None:
    """The issue's reproductions, by the same path: the calibration file as its own --out, the
    scenario as the report's index.html, the hf_config as summary.json."""
    (folder / "rep").mkdir()
    (folder / "rep" / "s.yaml").write_text(SCENARIO, encoding="utf-8")
    (folder / "rep" / "trace.csv").write_text(TRACE, encoding="utf-8")
    (folder / "rep" / "m").mkdir()
    (folder / "rep" / "m" / "config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    os.replace(folder / "rep" / "s.yaml", folder / "rep" / "index.html")
    cases = [
        (("calibrate", "cal.yaml", "--out", "cal.yaml"), "cal.yaml"),
        (("scenario", "rep/index.html", "--report", "rep"), "rep/index.html"),
        (("scenario", "s.yaml", "--out", "m"), "m/config.json"),
    ]
    (folder / "m" / "summary.json").symlink_to("config.json")
    for args, source in cases:
        before = _state(folder / source)
        code, _, err = simsched_cli(*args)
        assert code == 2 and "is the input" in err, err
        assert _state(folder / source) == before


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_report_does_not_overwrite_the_results_it_reads(folder: Path, kind, simsched_cli) -> None:
    for report, source in (("rep", "t.csv"), ("rep2", "results/requests.csv")):
        (folder / report).mkdir()
        _link(kind)(folder / source, folder / report / "index.html")
    for args, output in (
        (("report", "t.csv", "--out", "rep"), "rep/index.html"),
        (("report", "results", "--out", "rep2"), "rep2/index.html"),
    ):
        before = _state(folder / "t.csv"), _state(folder / "results" / "requests.csv")
        code, _, err = simsched_cli(*args)
        assert code == 2 and output in err and "is the input" in err, err
        assert (_state(folder / "t.csv"), _state(folder / "results" / "requests.csv")) == before


def test_every_file_a_report_writes_is_declared(noisy_neighbor_report) -> None:
    """The names checked before a run are the names a report can write: a report of a run that
    has every scenario plot but the prefix cache's (a timeline, shedding) writes only declared
    files."""
    from simsched.outputs.report_files import SCENARIO_REPORT_FILES

    written = {p.name for p in noisy_neighbor_report.folder.iterdir()}
    assert {"index.html", "kv_occupancy.png", "shed_reasons.png"} <= written
    assert written <= set(SCENARIO_REPORT_FILES)


@pytest.mark.parametrize("kind", ["same name", "symlink", "hardlink"])
def test_import_does_not_overwrite_the_servegen_files_it_reads(
    tmp_path: Path, monkeypatch, kind, simsched_cli
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "sg"
    folder.mkdir()
    source = folder / "chunk-1-trace.csv"  # refused before it is read: any content will do
    source.write_text("0,1.0,1.0\n", encoding="utf-8")
    out = source if kind == "same name" else tmp_path / "out.yaml"
    if kind != "same name":
        _link(kind)(source, out)
    before = _state(source)
    code, _, err = simsched_cli("import", "servegen", "sg", "--top", "1", "--out", str(out))
    assert code == 2 and "is the input" in err and "chunk-1-trace.csv" in err, err
    assert _state(source) == before
