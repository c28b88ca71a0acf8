"""Report structure, not pixels: figure sizes, panels per row, shared axes, log scales, lines
and targets present, no empty plot; the figures are inspected before they are saved."""

from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd
import pytest

from simsched.config.loading import load_scenario, resolve_variants
from simsched.outputs.report import page, plan_plots, scenario_plots, sweep_plots
from simsched.outputs.report.data import result_data
from simsched.results.simulate import simulate

REPO = Path(__file__).resolve().parents[2]
report_module = importlib.import_module("simsched.outputs.report")


def test_scenario_plots_wrap_share_and_use_log_scales(figures: dict, tmp_path: Path) -> None:
    scenario = load_scenario(REPO / "scenarios" / "noisy_neighbor_batching.yaml")
    names = [name for name, _ in resolve_variants(scenario)][:5]
    data = result_data(simulate(scenario, names))  # 5 variants: two rows of small multiples
    scenario_plots.ttft_cdf(data, tmp_path)
    scenario_plots.tpot_cdf(data, tmp_path)
    scenario_plots.queue_depth(data, tmp_path)
    ttft = figures["ttft_cdf.png"]
    axes = ttft.axes
    assert len(axes) == 5
    columns = {round(ax.get_position().x0, 2) for ax in axes}
    assert len(columns) == page.MAX_COLUMNS  # wraps: at most 4 a row
    width, height = ttft.get_size_inches()
    assert width <= page.PANEL_WIDTH * page.MAX_COLUMNS + 1 and height >= 2 * page.PANEL_HEIGHT
    assert all(ax.get_xscale() == "log" for ax in axes)
    assert axes[0].get_shared_x_axes().joined(axes[0], axes[4])
    labels = [line.get_label() for line in axes[1].lines]
    assert "tenant_chat_pro" in labels and any("target 500 ms" in lab for lab in labels)
    levels = [line.get_ydata()[0] for line in axes[1].lines if line.get_linestyle() == ":"]
    assert sorted(levels) == [0.5, 0.99]  # p50 and p99 marked
    assert len(figures["tpot_cdf.png"].axes) == 5
    queue = figures["queue_depth.png"].axes
    assert not queue[0].get_shared_y_axes().joined(queue[0], queue[1])  # own scales


def test_no_shed_plot_when_nothing_was_shed(tmp_path: Path) -> None:
    scenario = load_scenario(REPO / "scenarios" / "noisy_neighbor.yaml",
                             ["variants=[]", "admission.enabled=false"])  # fmt: skip
    assert scenario_plots.shed_counts(result_data(simulate(scenario)), tmp_path) is None


def sweep_table(gpus: list[str], replicas: list[int], seeds: int) -> pd.DataFrame:
    rows = []
    for gpu in gpus:
        for r in replicas:
            for seed in range(seeds):
                p99 = 1000 / r * (2 if gpu == "a100-80gb" else 1) + seed * 10
                rows.append({"point": len(rows), "seed": seed, "cluster.gpu": gpu,
                             "cluster.replicas": r, "variant": "v", "tenant": "all",
                             "p99_ttft_ms": p99, "slo_met": p99 <= 400, "error": None})  # fmt: skip
    return pd.DataFrame(rows)


def test_sweep_lines_per_other_axis_categories_bands_and_heatmap(
    figures: dict, tmp_path: Path
) -> None:
    table = sweep_table(["a100-80gb", "h100-80gb"], [1, 2, 3, 4], seeds=3)
    params = ["cluster.replicas", "cluster.gpu"]
    sweep_plots.metric_plot(table, "p99_ttft_ms", params, tmp_path)
    ax = figures["sweep_p99_ttft_ms.png"].axes[0]
    assert [line.get_label() for line in ax.lines] == [
        "cluster.gpu=a100-80gb",
        "cluster.gpu=h100-80gb",
    ]  # a line per value of the other axis, not an average over it
    assert list(ax.get_xticks()) == [1, 2, 3, 4]  # no replica count of 2.5
    assert len(ax.collections) == 2  # a seed band per line
    assert all(line.get_linestyle() == "-" for line in ax.lines)
    # the GPU axis given first: replicas still go on x, a line per GPU
    sweep_plots.metric_plot(table, "p99_ttft_ms", ["cluster.gpu", "cluster.replicas"], tmp_path)
    ax = figures["sweep_p99_ttft_ms.png"].axes[0]
    assert list(ax.get_xticks()) == [1, 2, 3, 4] and ax.get_xlabel().startswith("cluster.replicas")
    assert [line.get_label() for line in ax.lines] == [
        "cluster.gpu=a100-80gb",
        "cluster.gpu=h100-80gb",
    ]
    # GPUs alone: categories with markers, never a line between two GPUs
    gpus = sweep_table(["a100-80gb", "h100-80gb"], [2], seeds=3)
    sweep_plots.metric_plot(gpus, "p99_ttft_ms", ["cluster.gpu", "cluster.replicas"], tmp_path)
    ax = figures["sweep_p99_ttft_ms.png"].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a100-80gb", "h100-80gb"]
    assert ax.lines and all(
        line.get_linestyle() == "None" for line in ax.lines if line.get_label()[0] != "_"
    )
    assert all(line.get_marker() == "o" for line in ax.lines if line.get_label()[0] != "_")


def test_heatmap_boundary_on_cell_edges_log_scale_interactive(
    figures: dict, tmp_path: Path
) -> None:
    from matplotlib.colors import LogNorm

    table = sweep_table(["a100-80gb", "h100-80gb"], [1, 2, 3, 4], seeds=3)
    pooled = table.assign(tenant="interactive", p99_ttft_ms=table["p99_ttft_ms"] * 2)
    table = pd.concat([table, pooled], ignore_index=True)
    sweep_plots.heatmap(table, "p99_ttft_ms", ["cluster.replicas", "cluster.gpu"], tmp_path)
    heat = figures["heatmap_p99_ttft_ms.png"].axes[0]
    image = heat.images[0]
    assert isinstance(image.norm, LogNorm)  # latency: a log colour scale
    figure = figures["heatmap_p99_ttft_ms.png"]
    figure.canvas.draw()
    bar = figure.axes[1].yaxis
    labels = [t.get_text() for t in bar.get_majorticklabels() + bar.get_minorticklabels()]
    assert labels and not any("$" in text for text in labels)  # plain numbers, not mathtext
    assert image.get_array().max() == pytest.approx(2 * (2000 + 10))  # the interactive row
    # met in every seed: H100 (row 1) at 3 and 4 replicas (columns 2, 3); edges around them
    edges = sorted(
        (tuple(line.get_xdata()), tuple(line.get_ydata()))
        for line in heat.lines
        if line.get_color() == "red"
    )
    assert edges == [((1.5, 1.5), (0.5, 1.5)), ((1.5, 2.5), (0.5, 0.5)), ((2.5, 3.5), (0.5, 0.5))]


def test_no_heatmap_over_three_varying_settings(tmp_path: Path) -> None:
    table = sweep_table(["a100-80gb", "h100-80gb"], [1, 2], seeds=1)
    table = pd.concat([table.assign(**{"cluster.tp": tp}) for tp in (1, 2)], ignore_index=True)
    report_module.sweep_report(table, "s", tmp_path)
    assert not list(tmp_path.glob("heatmap_*.png"))
    assert "No heatmap: 3 swept settings vary" in (tmp_path / "index.html").read_text()


def test_plan_report_marks_target_and_answer(figures: dict, tmp_path: Path) -> None:
    probes = [
        {"value": v, "met": v >= 3, "metrics": {"all.p99_ttft_ms": 900 / v}} for v in (1, 2, 3, 4)
    ]
    document = {"knob": "cluster.replicas", "slos": ["all.p99_ttft_ms<=400"], "answer": 3,
                "probes": probes, "message": "the smallest is 3"}  # fmt: skip
    plan_plots.plan_report(document, tmp_path)
    ax = figures["plan_slos.png"].axes[0]
    labels = [line.get_label() for line in ax.lines]
    assert "target <= 400" in labels
    stars = [line for line in ax.lines if line.get_marker() == "*"]
    assert len(stars) == 1 and list(stars[0].get_xdata()) == [3]


def test_a_two_axis_sweep_with_one_single_value_axis_has_no_heatmap(tmp_path: Path) -> None:
    table = sweep_table(["a100-80gb", "h100-80gb"], [3], seeds=1)  # replicas: one value
    report_module.sweep_report(table, "s", tmp_path)
    plots = {p.name for p in tmp_path.glob("*.png")}
    assert "sweep_p99_ttft_ms.png" in plots and not any(p.startswith("heatmap") for p in plots)
