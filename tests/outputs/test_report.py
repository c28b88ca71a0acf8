"""Reports: valid PNG files and an index.html that shows every one, written all or nothing."""

from __future__ import annotations

import html
import importlib
import re
from pathlib import Path

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from simsched.cli.studies import register
from simsched.errors import InputError
from simsched.outputs.files import write_result
from simsched.outputs.report import report, write_report
from simsched.outputs.report.scenario_plots import cumulative_shares
from simsched.outputs.sweep_table import write_table
from simsched.results.simulate import simulate
from simsched.studies.sweep import sweep

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "noisy_neighbor.yaml"
report_module = importlib.import_module("simsched.outputs.report")  # the module, not a function
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SCENARIO_PLOTS = {
    "ttft_cdf.png",
    "tpot_cdf.png",
    "kv_occupancy.png",
    "queue_depth.png",
    "service_share.png",
    "shed_reasons.png",
}


def check_report(folder: Path) -> set[str]:
    """Every PNG is a PNG, index.html is a whole page, and it links and embeds every PNG."""
    plots = {p.name for p in folder.glob("*.png")}
    for name in plots:
        assert (folder / name).read_bytes().startswith(PNG_MAGIC), name
    page = (folder / "index.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert set(re.findall(r'href="([^"]+)"', page)) == plots
    assert page.count('src="data:image/png;base64,') == len(plots)  # opens on its own
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no staging left
    return plots


def test_scenario_report(noisy_neighbor_report) -> None:
    folder = noisy_neighbor_report.folder  # write_report(result, folder), drawn once
    assert noisy_neighbor_report.written == folder
    assert check_report(folder) == SCENARIO_PLOTS
    page = (folder / "index.html").read_text(encoding="utf-8")
    # the name is the title; the description sits under it, not in the <h1>
    assert "<h1>noisy_neighbor</h1>" in page and "tenant_batch_rag" in page
    assert '<p class="description">A batch tenant floods' in page


def test_report_of_an_output_folder(noisy_neighbor_report, tmp_path: Path) -> None:
    write_result(noisy_neighbor_report.result, tmp_path / "results")
    report(tmp_path / "results", tmp_path / "report")
    assert check_report(tmp_path / "report") == SCENARIO_PLOTS


def test_sweep_report_through_the_cli(tmp_path: Path) -> None:
    grid = {"admission.batch_kv_watermark": [0.5, 0.65, 0.95]}  # 0.95 fails by construction
    # one variant (the scenario as written, with admission): a panel a plot, not two; the
    # report draws a plot per metric that varies, so each panel costs about 16 of them
    rows = sweep(SCENARIO, grid, jobs=1, overrides=["variants=[]"], progress=False)
    table = write_table(rows, tmp_path / "sweep.csv")
    app = typer.Typer()
    register(app)
    out = tmp_path / "report"
    run = CliRunner().invoke(app, ["report", str(table), "--out", str(out)])
    assert run.exit_code == 0, run.output
    assert run.output == f"report written to {out / 'index.html'}\n"
    plots = check_report(out)
    assert {"sweep_shed.png", "sweep_p99_ttft_ms.png"} <= plots
    assert "sweep_submitted.png" not in plots  # the same at every point: listed, not drawn
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Failed points" in page and "must not exceed interactive_kv_watermark" in page


def test_a_failed_report_leaves_nothing(
    noisy_neighbor_report, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(_data, staging: Path):
        assert (staging / "ttft_cdf.png").is_file()  # a file is there for the failure to leave
        raise RuntimeError("plotting failed")

    # the second plot fails, after the first was saved in the staging folder (a later plot
    # would only draw more figures first)
    monkeypatch.setattr(report_module, "tpot_cdf", broken)
    with pytest.raises(RuntimeError):
        write_report(noisy_neighbor_report.result, tmp_path / "report")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [("missing", "no such file"), ("empty_dir", "no requests.csv"), ("x.txt", "ends in")],
)
def test_bad_report_inputs(tmp_path: Path, name: str, expected: str) -> None:
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "x.txt").write_text("hello")
    with pytest.raises(InputError, match=expected):
        report(tmp_path / name, tmp_path / "report")


def test_cumulative_shares_follow_dispatch_order() -> None:
    rows = pd.DataFrame(
        {
            "dispatch_ms": [0.0, 10.0, 20.0],
            "service_tokens": [100, 300, 100],
            "tenant_id": list("aba"),
        }
    )
    times, shares = cumulative_shares(rows, ["a", "b"])
    assert times[-1] == 20.0
    assert shares["a"][-1] == pytest.approx(0.4) and shares["b"][-1] == pytest.approx(0.6)
    assert shares["a"] + shares["b"] == pytest.approx(1.0)


def test_a_scenario_report_says_what_the_console_notes_say(tmp_path: Path) -> None:
    """The router note (least_kv's blind spot) under the title, as the console table prints it."""
    from simsched.config.loading import validate
    from simsched.outputs.cluster_table import table_notes

    tenant = {"id": "a", "arrivals": {"kind": "periodic", "interval_ms": 50, "count": 4},
              "prefill_tokens": 200, "decode_tokens": 20}  # fmt: skip
    cluster = {"service_model": "continuous_batching", "replicas": 2, "router": "least_kv"}
    result = simulate(validate({"tenants": [tenant], "cluster": cluster}, "x.yaml"))
    notes = table_notes(result)
    assert any("least_kv" in note for note in notes)
    page = (write_report(result, tmp_path / "r") / "index.html").read_text(encoding="utf-8")
    for note in notes:
        assert f"<p>note: {html.escape(note)}</p>" in page


def test_a_report_of_a_results_folder_recomputes_the_notes_it_can(tmp_path: Path) -> None:
    """Skew, shedding and no backlog from the folder's files, as the console says them; the
    router note needs the settings, and the page says where it is."""
    from simsched.config.loading import validate
    from simsched.outputs.cluster_table import table_notes
    from simsched.outputs.report.folder_notes import SETTINGS_NOTES

    # 8 replicas serve a's 3 requests (at most one each: max/mean >= 1 / (3/8) = 2.67, skewed);
    # b's 5000-token prompt needs 313 blocks of 16, more than a replica's 100: both shed (40%);
    # 1000 ms apart, no two requests ever wait at once: no backlog
    tenants = [
        {"id": "a", "arrivals": {"kind": "periodic", "interval_ms": 1000, "count": 3},
         "prefill_tokens": 200, "decode_tokens": 20},
        {"id": "b", "arrivals": {"kind": "periodic", "interval_ms": 1000, "count": 2,
                                 "start_ms": 500},
         "prefill_tokens": 5000, "decode_tokens": 20},
    ]  # fmt: skip
    cluster = {"service_model": "continuous_batching", "replicas": 8, "router": "least_kv",
               "num_gpu_blocks": 100}  # fmt: skip
    raw = {
        "tenants": tenants,
        "cluster": cluster,
        "admission": {"enabled": True},
        "variants": [{"name": "drr", "set": {"scheduler.policy": "service_token_drr"}},
                     {"name": "fifo", "set": {"scheduler.policy": "request_count_fifo"}}],
    }  # fmt: skip
    result = simulate(validate(raw, "x.yaml"))
    console = table_notes(result)
    kinds = ["least_kv", "skewed", "admitted requests only", "no gateway backlog"]
    assert [any(k in note for note in console) for k in kinds] == [True] * 4
    write_result(result, tmp_path / "results")
    page = (report(tmp_path / "results", tmp_path / "r") / "index.html").read_text()
    for note in console:
        assert (f"<p>note: {html.escape(note)}</p>" in page) == ("least_kv" not in note), note
    assert f"<p>note: {html.escape(SETTINGS_NOTES)}</p>" in page
