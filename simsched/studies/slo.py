"""SLO expressions: `TARGET.METRIC OP LIMIT`, judged on a metrics row (`simsched.results.tenants`).

TARGET is a tenant id, `all`, or a priority class (`interactive`, `batch`: the class's requests
pooled, `simsched.results.tenants.class_metric_rows`; a tenant of that name wins), METRIC a column
of the metrics row, OP one of <=, <, >=, >.
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from dataclasses import dataclass

from simsched.config.classes import CLASS_NAMES
from simsched.config.scenario import Scenario
from simsched.errors import InputError
from simsched.results.tenants import ALL, METRIC_COLUMNS, SESSION_METRICS

OPERATORS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt}
SLO_PATTERN = re.compile(
    r"^\s*(?P<target>\S+?)\.(?P<metric>[A-Za-z_]\w*)\s*(?P<op><=|>=|<|>)\s*(?P<limit>\S+)\s*$"
)


@dataclass(frozen=True)
class Slo:
    text: str
    target: str
    metric: str
    op: str
    limit: float

    @property
    def key(self) -> str:
        return f"{self.target}.{self.metric}"

    def met(self, value: float | None) -> bool:
        # a metric with no value (no TTFT for a tenant that sent nothing, say) meets nothing
        return value is not None and not math.isnan(value) and OPERATORS[self.op](value, self.limit)


def parse_slo(text: str, label: str = "") -> Slo:
    match = SLO_PATTERN.match(text)
    if not match:
        raise InputError(label, f"--slo {text}", "expected TENANT.METRIC<=LIMIT (or <, >=, >)")
    metric = match["metric"]
    if metric not in METRIC_COLUMNS:
        raise InputError(label, f"--slo {text}", _unknown_metric(metric))
    try:
        limit = float(match["limit"])
    except ValueError:
        limit = math.nan
    if not math.isfinite(limit):
        raise InputError(label, f"--slo {text}", f"the limit {match['limit']!r} is not a number")
    return Slo(text.strip(), match["target"], metric, match["op"], limit)


def _unknown_metric(metric: str) -> str:
    """`p99_ttft` is most likely `p99_ttft_ms`: the closest name first, then every name."""
    close = difflib.get_close_matches(metric, METRIC_COLUMNS, n=1)
    guess = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown metric {metric!r}{guess} (known: {', '.join(METRIC_COLUMNS)})"


def check_targets(slos: list[Slo], scenario: Scenario, label: str) -> None:
    tenants = scenario.tenant_ids()
    for slo in slos:
        if slo.target != ALL and slo.target not in tenants and slo.target not in CLASS_NAMES:
            known = ", ".join(dict.fromkeys([ALL, *CLASS_NAMES, *tenants]))  # a tenant `batch`
            raise InputError(
                label, f"--slo {slo.text}", f"no tenant or class {slo.target!r} (known: {known})"
            )
        if slo.metric in SESSION_METRICS:
            _check_sessions(slo, scenario, label)
        if slo.target in CLASS_NAMES and slo.target not in tenants:
            members = [t.id for t in scenario.tenants if t.priority == slo.target]
            if not members:  # a class with no tenant sends nothing: its SLO would judge nothing
                raise InputError(
                    label,
                    f"--slo {slo.text}",
                    f"no tenant of the judged variant is in the {slo.target} class, so there is "
                    "nothing to judge (set a tenant's priority, or drop this SLO)",
                )


def _check_sessions(slo: Slo, scenario: Scenario, label: str) -> None:
    """A turn metric has a value only over tenants that send sessions: an SLO on one of them
    for a target without any would judge nothing and never be met."""
    named = [t for t in scenario.tenants if t.id == slo.target]  # a tenant named like a class
    members = named or [t for t in scenario.tenants if slo.target in (ALL, t.priority)]
    if not any(t.arrivals is not None and t.arrivals.kind == "sessions" for t in members):
        raise InputError(
            label,
            f"--slo {slo.text}",
            f"{slo.metric} counts session turns, and {slo.target!r} sends no sessions "
            "(judge shed_rate there instead)",
        )
