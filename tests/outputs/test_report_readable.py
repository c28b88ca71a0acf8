"""Every report kind (scenario, sweep, plan, fleet plan) is readable: no raw mathtext, an axis
label and tick labels on every panel, no NaN text, seed bands inside each metric's valid range,
and an outlier kept from squashing the rest. The figures' text objects and the page are read."""

from __future__ import annotations

import importlib
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from simsched.outputs.report import plan_plots, scenario_plots
from simsched.outputs.report.data import ScenarioData, result_data
from simsched.outputs.report.tables import per_tenant_tables
from simsched.results.metric_ranges import valid_range

REPO = Path(__file__).resolve().parents[2]
report_module = importlib.import_module("simsched.outputs.report")


def texts(fig) -> list[str]:
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]


def check_figure(name: str, fig) -> None:
    """No mathtext or NaN in any text; every panel with data labels both axes and shows x ticks."""
    for text in texts(fig):
        assert "$" not in text and "mathdefault" not in text, (name, text)
        assert not re.search(r"\bnan\b", text, re.IGNORECASE), (name, text)
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>" or twin(ax):  # the panel beside it labels x
            assert ax.get_ylabel(), name
            continue
        assert ax.get_xlabel() and ax.get_ylabel(), (name, ax.get_title())
        assert x_labels_in_view(ax), (name, ax.get_title(), "no x tick labels in view")


def twin(ax) -> bool:
    """A second y axis over a panel (`twinx`): it shares the panel's place and its x axis."""
    others = [o for o in ax.figure.axes if o is not ax and o.bbox.bounds == ax.bbox.bounds]
    return bool(others) and not ax.get_xlabel() and any(o.get_xlabel() for o in others)


def x_labels_in_view(ax) -> list[str]:
    """The x tick labels a reader sees: drawn, with text, at a tick inside the axis' range (a
    label at 10 or 100 outside a 11-17 range shows nothing)."""
    ax.figure.canvas.draw()
    low, high = sorted(ax.get_xlim())
    ticks = [*ax.xaxis.get_major_ticks(), *ax.xaxis.get_minor_ticks()]
    return [
        t.label1.get_text()
        for t in ticks
        if t.label1.get_visible() and t.label1.get_text() and low <= t.get_loc() <= high
    ]


def check_page(folder: Path) -> str:
    html = (folder / "index.html").read_text(encoding="utf-8")
    visible = re.sub(r'src="data:image/png;base64,[^"]*"', "", html)
    assert not re.search(r"\bnan\b", visible, re.IGNORECASE)
    assert not re.search(r">\s*None\s*<", visible)  # an empty cell is empty
    assert "mathdefault" not in visible
    return visible


def many_variants(data: ScenarioData, copies: int) -> ScenarioData:
    """The same result under `copies` more variant names: a grid of two rows, cheaply."""
    names = [f"{v}_{i}" for i in range(copies) for v in data.variants]

    def spread(frame: pd.DataFrame | None) -> pd.DataFrame | None:
        if frame is None:
            return None
        parts = [frame.assign(variant=frame["variant"] + f"_{i}") for i in range(copies)]
        return pd.concat(parts, ignore_index=True)

    slo = {f"{v}_{i}": data.slo_ms[v] for i in range(copies) for v in data.variants}
    tpot = {f"{v}_{i}": data.tpot_slo_ms[v] for i in range(copies) for v in data.variants}
    return ScenarioData(data.title, names, spread(data.requests), spread(data.tenants),
                        spread(data.timeline), slo, tpot, data.description)  # fmt: skip


def test_scenario_report_is_readable(noisy_neighbor_report, figures: dict, tmp_path: Path) -> None:
    drawn = noisy_neighbor_report.figures  # the shipped scenario's report, drawn once
    assert {"ttft_cdf.png", "tpot_cdf.png", "queue_depth.png", "shed_reasons.png"} <= set(drawn)
    for name, fig in drawn.items():
        check_figure(name, fig)
    assert all(ax.get_xscale() == "log" for ax in drawn["ttft_cdf.png"].axes)
    visible = check_page(noisy_neighbor_report.folder)
    assert "<h1>noisy_neighbor</h1>" in visible
    assert visible.count("<h2>Per tenant") == 1  # 2 variants x 3 tenants: one table
    assert "<th>metric</th>" in visible and "<th>p99_ttft_ms</th>" not in visible  # on its side
    # six variants wrap into two rows (4 + 2): a panel above an empty slot, and the shared x
    # axis, still label every panel (a cheap linear plot; the log ones are checked above)
    wide = many_variants(result_data(noisy_neighbor_report.result), 3)
    scenario_plots.queue_depth(wide, tmp_path)
    check_figure("queue_depth.png", figures["queue_depth.png"])
    assert len(figures["queue_depth.png"].axes) == 6
    tables = per_tenant_tables(wide.tenants)
    # whole variants (3 tenants each) per part, at most 8 tenant columns: 2 + 2 + 2 variants
    assert [len(table.columns) - 1 for _, table in tables] == [6, 6, 6]


def sweep_rows() -> pd.DataFrame:
    """Three seeds at 1..5 replicas: a latency that floods at 1 (an outlier), shed rates near 0
    and attainments near 1 whose t-intervals reach past the metric's range."""
    rows = []
    for replicas in (1, 2, 3, 4, 5):
        for seed in range(3):
            p99 = 50_000.0 if replicas == 1 else 800 / replicas + 30 * seed
            shed = [0.0, 0.03, 0.0][seed] if replicas <= 3 else 0.0
            attainment = [1.0, 0.9, 1.0][seed]
            for tenant in ("chat", "all"):
                rows.append({"point": replicas * 10 + seed, "seed": seed,
                             "cluster.replicas": replicas, "variant": "v", "tenant": tenant,
                             "p99_ttft_ms": p99, "shed_rate": shed, "shed": round(shed * 100),
                             "slo_attainment": attainment, "slo_met": p99 <= 300,
                             "error": None})  # fmt: skip
    return pd.DataFrame(rows)


def band_values(ax) -> list[float]:
    """The y values of every band (fill_between polygons) and error bar in a panel."""
    from matplotlib.collections import LineCollection, PolyCollection

    values = []
    for collection in ax.collections:
        if isinstance(collection, PolyCollection):
            values += [y for path in collection.get_paths() for _, y in path.vertices]
        elif isinstance(collection, LineCollection):
            values += [y for segment in collection.get_segments() for _, y in segment]
    return values


def test_sweep_report_is_readable_bands_clipped_outlier_off_scale(
    figures: dict, tmp_path: Path
) -> None:
    table = sweep_rows()
    targets = report_module.sweep_targets(table, ["all.p99_ttft_ms<=300"], "t.csv")
    report_module.sweep_report(table, "t.csv", tmp_path, targets)
    for name, fig in figures.items():
        check_figure(name, fig)
    for metric in ("shed_rate", "shed", "slo_attainment", "p99_ttft_ms"):
        low, high = valid_range(metric)
        ax = figures[f"sweep_{metric}.png"].axes[0]
        bands = band_values(ax)
        assert bands, metric  # seeds differ: there is a band to check
        assert all(low - 1e-9 <= y <= high + 1e-9 for y in bands), metric
    # the flood at 1 replica (50,000 ms) is off the scale, and the panel says so
    ax = figures["sweep_p99_ttft_ms.png"].axes[0]
    top = ax.get_ylim()[1]
    # the highest other mean is 800/2 + 30 = 430 (at 2 replicas, seeds 0..2 add 0, 30, 60)
    assert 430 < top < 1000
    assert "off the scale above: 5e+04" in ax.get_title()
    # the question first: the SLO, a line per variant, its target
    html = check_page(tmp_path)
    first = re.search(r'<a href="([^"]+)"', html)[1]
    assert first == "sweep_slos.png"
    slo_ax = figures["sweep_slos.png"].axes[0]
    assert [line.get_label() for line in slo_ax.lines] == ["v", "target <= 300"]
    assert "SLO targets: all.p99_ttft_ms&lt;=300." in html


def test_sweep_report_default_target_and_bad_targets() -> None:
    table = sweep_rows()
    assert [t.text for t in report_module.sweep_targets(table, [], "t.csv")] == ["all.slo_met>=1"]
    from simsched.errors import InputError

    with pytest.raises(InputError, match="no row 'nobody'"):
        report_module.sweep_targets(table, ["nobody.p99_ttft_ms<=1"], "t.csv")
    with pytest.raises(InputError, match="no metric 'p99_ttft'"):
        report_module.sweep_targets(table, ["all.p99_ttft<=1"], "t.csv")


def plan_document() -> dict:
    """A fleet plan's document as `FleetPlan.to_json_dict` writes it: two GPUs, three seeds,
    the 1-replica probes shedding (their shed-rate intervals reach below 0)."""

    def probes(gpu: str, scale: float) -> list[dict]:
        out = []
        for value in (1, 2, 3, 4):
            shed = 0.7 / value if value < 3 else 0.0
            p99 = 300.0 if value == 1 else scale * 900 / value  # admitted only at 1 replica
            out.append({
                "over": {"cluster.gpu": gpu}, "value": value, "met": p99 <= 400 and not shed,
                "metrics": {"interactive.p99_ttft_ms": p99, "all.shed_rate": shed},
                "intervals": {
                    "interactive.p99_ttft_ms": {"mean": p99, "low": p99 - 50, "high": p99 + 50,
                                                "seeds": 3},
                    "all.shed_rate": {"mean": shed, "low": shed - 0.05, "high": shed + 0.05,
                                      "seeds": 3},
                },
                "margins": {}, "shed_rate": {"all": shed},
            })  # fmt: skip
        return out

    combos = [
        {"answer": 3, "probes": probes("a100-80gb", 1.2), "knob": "cluster.replicas",
         "over": {"cluster.gpu": "a100-80gb"}, "gpus": 3, "cost_per_hour": 8.1, "warnings": []},
        {"answer": 3, "probes": probes("h100-80gb", 1.0), "knob": "cluster.replicas",
         "over": {"cluster.gpu": "h100-80gb"}, "gpus": 3, "cost_per_hour": 30.775,
         "warnings": []},
        {"answer": None, "probes": [], "knob": "cluster.replicas",
         "over": {"cluster.gpu": "h200"}, "warnings": []},  # none meets: empty cells
    ]  # fmt: skip
    return {
        "scenario": "fleet_study",
        "answer": 3,
        "over": {"cluster.gpu": "a100-80gb"},
        "combinations": combos,
        "knob": "cluster.replicas",
        "variant": "base",
        "minimize": "cost",
        "slos": ["interactive.p99_ttft_ms<=400", "all.shed_rate<=0.001"],
        "message": "the cheapest meeting every SLO: cluster.gpu=a100-80gb with "
        "cluster.replicas=3 (3 GPUs, $8.10/hour)",
        "warnings": ["cluster.gpu=h100-80gb: something to know"],
        "rule": "interval",
        "seeds": 3,
        "notes": [
            "3 seeds per probe; decision rule: each SLO holds at the pessimistic end",
            "prices per GPU-hour: a100-80gb $2.7 (list price)",
        ],
    }


def test_plan_reports_are_readable_and_say_what_the_console_says(
    figures: dict, tmp_path: Path
) -> None:
    document = plan_document()
    for folder in ("fleet", "one"):
        (tmp_path / folder).mkdir()
    plan_plots.plan_report(document, tmp_path / "fleet")
    check_figure("fleet", figures["plan_slos.png"])
    shared = ("knob", "variant", "slos", "message", "rule", "seeds", "notes", "scenario")
    one = document["combinations"][1] | {key: document[key] for key in shared}
    plan_plots.plan_report(one, tmp_path / "one")  # one search: its own document
    check_figure("one", figures["plan_slos.png"])
    for folder in ("fleet", "one"):
        html = check_page(tmp_path / folder)
        assert "<h1>plan: fleet_study</h1>" in html
        assert "interactive.p99_ttft_ms&lt;=400" in html  # the SLOs
        assert "note: 3 seeds per probe; decision rule: each SLO holds" in html
        assert html.count("3 seeds per probe") == 1  # said once, by its note
        assert "note: prices per GPU-hour: a100-80gb $2.7 (list price)" in html
        assert "$30.77/hour" in html and "30.775" not in html
    fleet_html = check_page(tmp_path / "fleet")
    assert "warning: cluster.gpu=h100-80gb: something to know" in fleet_html
    assert "minimize cost" in fleet_html and "$8.10/hour" in fleet_html
    assert "<td>none meets</td>" in fleet_html
    ax = figures["plan_slos.png"].axes[0]
    rings = [line for line in ax.lines if line.get_label() == plan_plots.SHED_LABEL]
    assert rings and list(rings[0].get_xdata()) == [1, 2]  # the probes that shed
    shed_ax = figures["plan_slos.png"].axes[1]
    assert all(y >= 0 for y in band_values(shed_ax))  # no shed rate below 0


def test_robust_limits_by_hand() -> None:
    from simsched.outputs.report.limits import robust_limits

    # 200..500 and one flood (Tukey's far-out fence: 500 + 3 x 200 = 1100): the kept range is
    # 300 wide, 10% headroom above it; the bottom at the metric's lowest valid value, else 10%
    # below the kept values
    values = [200.0, 300.0, 400.0, 500.0, 50_000.0]
    assert robust_limits(values, lowest=0.0) == pytest.approx((0.0, 530.0))
    assert robust_limits(values) == pytest.approx((170.0, 530.0))
    # a target above the kept values stays in view
    assert robust_limits(values, floor=800.0) == pytest.approx((140.0, 860.0))
    # nothing far out, or too few values: the full range
    assert robust_limits([1.0, 2.0, 3.0, 4.0, 5.0]) is None
    assert robust_limits([1.0, 1000.0, 2.0]) is None
    # a flat curve but for one value squashes nothing: the whole range stays
    assert robust_limits([0.0, 0.0, 0.0, 0.0, 0.7], floor=0.001) is None
    assert math.isinf(valid_range("p99_ttft_ms")[1]) and valid_range("shed_rate") == (0.0, 1.0)


def legends(fig) -> list:
    from matplotlib.legend import Legend

    return [item for item in fig.findobj(Legend) if item.get_visible()]


def test_autoscaling_figures_have_one_legend_clear_of_the_panels(
    figures: dict, tmp_path: Path
) -> None:
    """Replicas over time: one legend for the figure, under the panels, overlapping no panel
    (a legend per axis, inside each panel, overlapped each other and the lines); KV occupancy:
    one legend entry for all the replicas, not a row each."""
    from simsched.config.loading import load_scenario
    from simsched.outputs.report import scaling_plots
    from simsched.results.simulate import simulate

    short = [f"tenants.{t}.arrivals.duration_s=60" for t in ("chat", "batch")]
    scenario = load_scenario(REPO / "scenarios" / "autoscaled_day.yaml", short)
    data = result_data(simulate(scenario, ["fixed_peak_pool", "autoscaled_prewarmed"]))
    scaling_plots.replicas_over_time(data, tmp_path)
    scenario_plots.kv_occupancy(data, tmp_path)
    fig = figures["replicas_over_time.png"]
    check_figure("replicas_over_time.png", fig)
    fig.canvas.draw()
    renderer = fig._get_renderer()  # noqa: SLF001 - the Figure API has no public one
    (legend,) = legends(fig)
    assert [t.get_text() for t in legend.get_texts()] == [
        "replicas provisioned", "replicas serving", "requests/s"
    ]  # fmt: skip
    box = legend.get_window_extent(renderer)
    assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
    # a fixed pool's provisioned and serving counts are equal: the serving line must not hide
    # the provisioned one (same colour, drawn narrower on top of a wider pale band)
    for ax in fig.axes:
        steps = {line.get_label(): line for line in ax.get_lines()}
        if "replicas serving" not in steps:
            continue  # the request-rate axis
        provisioned, serving = steps["replicas provisioned"], steps["replicas serving"]
        assert provisioned.get_color() == serving.get_color()
        assert provisioned.get_linewidth() > 2 * serving.get_linewidth()
        assert (provisioned.get_alpha() or 1.0) < 1.0
    kv = figures["kv_occupancy.png"]
    check_figure("kv_occupancy.png", kv)
    for ax in kv.axes:  # four replicas in the fixed pool: the cluster line and one for them all
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["cluster", "each replica"]


def test_variant_panels_share_one_legend_and_log_ticks_read_plainly(noisy_neighbor_report) -> None:
    """Two variants with the same tenants: one legend under the panels, none on them (a legend
    inside a CDF panel covers its lines); log tick labels below 1 read 0.8, not 8e-01."""
    drawn = noisy_neighbor_report.figures
    for name in ("ttft_cdf.png", "tpot_cdf.png", "service_share.png"):
        fig = drawn[name]
        assert len(fig.legends) == 1, name
        assert all(ax.get_legend() is None for ax in fig.axes), name
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert {"tenant_chat_pro", "tenant_ide_assist", "tenant_batch_rag"} <= set(labels)
    for ax in drawn["tpot_cdf.png"].axes:
        shown = x_labels_in_view(ax)
        assert shown and not any(re.search(r"\de[-\u2212+]", s) for s in shown), shown


def test_panels_that_disagree_keep_their_own_legends() -> None:
    from matplotlib.figure import Figure

    from simsched.outputs.report.legends import shared_legend

    fig = Figure()
    left, right = fig.subplots(1, 2)
    left.plot([0, 1], label="a")
    left.plot([0, 1], label="b")
    right.plot([0, 1], label="b")  # b takes the first colour here: a shared legend would lie
    for ax in (left, right):
        ax.legend()
    assert not shared_legend(fig, [left, right])
    assert left.get_legend() is not None and not fig.legends
