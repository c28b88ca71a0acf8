"""Import ServeGen per-client workload data as a multi-tenant scenario.

ServeGen (Xiang et al., "ServeGen: Workload Characterization and Generation of Large Language
Model Serving in Production", NSDI 2026) released, per client of Alibaba Cloud Model Studio, a
600 s-window series of request rate and inter-arrival CV (`chunk-N-trace.csv`) and token-length
PMFs per 6 h window (`chunk-N-dataset.json`). The importer turns a span of windows into:

- one tenant per large client (`client_N`, the `top` clients by requests in the span), with a
  step `rate_schedule` (one point per window) and `empirical` prefill/decode lengths;
- one `long_tail` tenant for all other clients active in the span: rates summed, CV the
  rate-weighted mean, PMFs pooled by request share.

Lengths: the PMFs of the dataset windows overlapping the span, averaged with the client's
requests in each as weights; when none overlaps, the nearest one (the latest before the span,
else the first). A tenant none of whose clients has a dataset file (or any non-empty PMF) borrows
the pooled PMFs of all the other tenants, `long_tail` included, by request share: the pool of the
top clients alone can be one narrow client (in language_m-small's first hours the two busiest
clients have no dataset file and the third has five distinct prompt lengths).

Every tenant gets weight 1.0 (ServeGen says nothing about contracted shares, so all start equal)
and priority `interactive`; no quotas. Cluster, scheduler and admission are left out so the
scenario defaults apply; `rate_scale` multiplies every rate, to fit the load to a cluster.

The two kinds of ServeGen file are read by `servegen_rates` (rate series, window span, ranking)
and `servegen_lengths` (PMFs); this module groups clients into tenants and writes the scenario.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from simsched.errors import InputError
from simsched.outputs.atomic import write_text_atomic
from simsched.workload.servegen_lengths import (
    FIELDS,
    QUOTE_KEYS,
    Lengths,
    Pmf,
    client_lengths,
    pool_lengths,
)
from simsched.workload.servegen_rates import (
    TRACE_COLUMNS,
    TRACE_FILE,
    WINDOW_S,
    Span,
    group_rates,
    rank,
    read_rates,
    select_windows,
)

__all__ = [  # the parsers' names too, importable from here as before the split
    "FIELDS",
    "LONG_TAIL",
    "QUOTE_KEYS",
    "TRACE_COLUMNS",
    "TRACE_FILE",
    "WINDOW_S",
    "Group",
    "Pmf",
    "Span",
    "import_servegen",
    "write_scenario_yaml",
]

LONG_TAIL = "long_tail"


@dataclass(frozen=True)
class Group:
    """One tenant-to-be: its clients' summed rates and mean CV per window, and its lengths."""

    id: str
    rates: np.ndarray
    cvs: np.ndarray
    lengths: Lengths | None


def import_servegen(
    directory: str | Path,
    top: int,
    start_window: int = 0,
    windows: int | None = None,
    name: str | None = None,
    rate_scale: float = 1.0,
) -> dict:
    """A raw scenario mapping (plain Python values, ready for `yaml.safe_dump`)."""
    directory = Path(directory)
    label = str(directory)
    if top < 1:
        raise InputError(label, "top", f"must be at least 1, not {top}")
    if not rate_scale > 0:
        raise InputError(label, "rate_scale", f"must be greater than 0, not {rate_scale}")
    clients, grid, rates, cvs = read_rates(directory, label)
    span = select_windows(grid, start_window, windows, label)
    columns = slice(span.first, span.first + len(span.starts))
    rates, cvs = rates[:, columns] * rate_scale, cvs[:, columns]
    chosen, tail = rank(rates, top, label)
    groups = [
        _group(f"client_{clients[i]}", [i], rates, cvs, clients, directory, span) for i in chosen
    ]
    if tail:
        groups.append(_group(LONG_TAIL, tail, rates, cvs, clients, directory, span))
    groups = _fill_missing_lengths(groups, label)
    return {
        "name": name or f"servegen-{directory.name}",
        "description": _description(directory, span, [clients[i] for i in tail], rate_scale),
        "tenants": [_tenant(group, span) for group in groups],
    }


def write_scenario_yaml(mapping: dict, out_path: str | Path) -> Path:
    """Write the mapping as YAML, atomically: a reader never sees half a file."""
    text = yaml.safe_dump(mapping, sort_keys=False, default_flow_style=None, width=100)
    return write_text_atomic(Path(out_path), text)


def _group(tenant_id, members, rates, cvs, clients, directory, span) -> Group:
    total, cv = group_rates(rates[members], cvs[members])
    pmfs = [
        (client_lengths(directory, clients[i], span, rates[i]), rates[i].sum()) for i in members
    ]
    known = [(p, w) for p, w in pmfs if p is not None]
    lengths = pool_lengths([p for p, _ in known], [w for _, w in known]) if known else None
    return Group(tenant_id, total, cv, lengths)


def _fill_missing_lengths(groups: list[Group], label: str) -> list[Group]:
    """Tenants without PMFs take the pooled PMFs of all the others, by request share."""
    known = [g for g in groups if g.lengths is not None]
    if not known:
        raise InputError(label, "", "no dataset file has token lengths for the chosen clients")
    fallback = pool_lengths([g.lengths for g in known], [g.rates.sum() for g in known])
    return [g if g.lengths is not None else Group(g.id, g.rates, g.cvs, fallback) for g in groups]


def _tenant(group: Group, span: Span) -> dict:
    times = span.starts - span.starts[0]
    rows = zip(times, group.rates, group.cvs, strict=True)
    points = [[int(t), float(r), float(c)] for t, r, c in rows]
    return {
        "id": group.id,
        "weight": 1.0,
        "priority": "interactive",
        "arrivals": {
            "kind": "rate_schedule",
            "points": points,
            "interpolation": "step",
            "duration_s": float(len(span.starts) * WINDOW_S),
        },
        **{key: _empirical(group.lengths[key]) for key in FIELDS},
    }


def _empirical(pmf: Pmf) -> dict:
    return {
        "dist": "empirical",
        "values": [int(v) for v in pmf.values],
        "weights": [float(w) for w in pmf.weights],
    }


def _description(directory: Path, span: Span, tail: list[int], rate_scale: float) -> str:
    last = span.first + len(span.starts) - 1
    text = (
        f"Imported from ServeGen per-client data, folder {directory.name}, windows "
        f"{span.first}..{last} ({WINDOW_S} s each). ServeGen: Xiang et al., 'ServeGen: Workload "
        "Characterization and Generation of Large Language Model Serving in Production', "
        "NSDI 2026 (Alibaba Cloud Model Studio production traffic; Apache-2.0)."
    )
    if tail:
        text += f" {LONG_TAIL} merges clients {', '.join(map(str, tail))}."
    if rate_scale != 1.0:
        text += f" Rates are scaled by {rate_scale:g}."
    return text
