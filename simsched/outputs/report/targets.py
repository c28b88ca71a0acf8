"""SLO targets on a report's figures: `ROW.METRIC OP LIMIT` (the plan's and `report --slo`
syntax), drawn as a red dashed line at the limit."""

from __future__ import annotations

from dataclasses import dataclass

TARGET_OPS = ("<=", ">=", "<", ">")  # two-character operators first
TARGET_GID = "slo-target"  # marks target lines, so that limits and checks can tell them apart


@dataclass(frozen=True)
class Target:
    text: str
    row: str  # a tenant id, a class or `all`: the sweep table's `tenant` column
    metric: str
    op: str
    limit: float


def parse_target(text: str) -> Target:
    """`all.p99_ttft_ms<=500` as a Target; ValueError when it is not one."""
    for op in TARGET_OPS:
        if op in text:
            key, limit = text.split(op, 1)
            row, _, metric = key.strip().rpartition(".")
            if not row or not metric:
                break
            return Target(text.strip(), row, metric, op, float(limit))
    raise ValueError(f"{text!r} is not ROW.METRIC<=LIMIT (or <, >=, >)")


def draw_target(ax, target: Target) -> None:
    ax.axhline(target.limit, color="red", linestyle="--", linewidth=1, gid=TARGET_GID,
               label=f"target {target.op} {target.limit:g}")  # fmt: skip
