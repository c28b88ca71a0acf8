"""The files a report may write, known before it is drawn.

A report's folder is checked before the run (`outputs.preflight`) so that none of these names
is a file the run reads; the report package refuses to publish a file missing from its list
(`outputs.report.publish`), so the list cannot fall behind the plots.
"""

from __future__ import annotations

INDEX = "index.html"
SCENARIO_REPORT_FILES = (
    INDEX,
    "ttft_cdf.png",
    "tpot_cdf.png",
    "kv_occupancy.png",
    "queue_depth.png",
    "service_share.png",
    "shed_reasons.png",
    "prefix_hit_rate.png",
    "cost_per_tenant.png",
    "replicas_over_time.png",
)
PLAN_REPORT_FILES = (INDEX, "plan_slos.png")


def sweep_report_files() -> tuple[str, ...]:
    """A sweep report's names: the SLO section, a plot per metric, and a heatmap per metric."""
    from simsched.results.tenants import METRIC_COLUMNS  # pandas: only when a report is asked

    plots = [f"{kind}_{metric}.png" for kind in ("sweep", "heatmap") for metric in METRIC_COLUMNS]
    return (INDEX, "sweep_slos.png", *plots, "sweep_cost_per_tenant.png")
