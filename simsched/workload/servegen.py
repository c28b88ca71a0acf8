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
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from simsched.errors import InputError
from simsched.workload.inspect import write_text_atomic

WINDOW_S = 600
LONG_TAIL = "long_tail"
FIELDS = {"prefill_tokens": "input_tokens", "decode_tokens": "output_tokens"}
TRACE_FILE = re.compile(r"chunk-(\d+)-trace\.csv")
QUOTE_KEYS = re.compile(r"([{,]\s*)(\d+)\s*:")
TRACE_COLUMNS = ["window_start_s", "rate", "cv", "pattern", "shape", "scale"]


@dataclass(frozen=True)
class Pmf:
    """An empirical distribution: ascending token counts and their probabilities (sum 1)."""

    values: np.ndarray
    weights: np.ndarray


@dataclass(frozen=True)
class Span:
    """The selected windows: their start times (s) and positions in the data."""

    starts: np.ndarray
    first: int

    @property
    def end_s(self) -> float:
        return float(self.starts[-1]) + WINDOW_S


@dataclass(frozen=True)
class Group:
    """One tenant-to-be: its clients' summed rates and mean CV per window, and its lengths."""

    id: str
    rates: np.ndarray
    cvs: np.ndarray
    lengths: dict[str, Pmf] | None  # keyed by prefill_tokens / decode_tokens


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
    clients, grid, rates, cvs = _read_rates(directory, label)
    span = _select_windows(grid, start_window, windows, label)
    columns = slice(span.first, span.first + len(span.starts))
    rates, cvs = rates[:, columns] * rate_scale, cvs[:, columns]
    chosen, tail = _rank(rates, top, label)
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


def _read_rates(directory: Path, label: str):
    """Client ids, the shared window grid, and (clients x windows) rate and CV matrices."""
    if not directory.is_dir():
        raise InputError(label, "", "no such folder")
    files = {int(m.group(1)): p for p in directory.iterdir() if (m := TRACE_FILE.fullmatch(p.name))}
    if not files:
        raise InputError(label, "", "holds no chunk-N-trace.csv files (is it a ServeGen folder?)")
    clients = sorted(files)
    frames = [_read_trace_file(files[c]) for c in clients]
    grid = frames[0]["window_start_s"].to_numpy()
    for client, frame in zip(clients, frames, strict=True):
        if not np.array_equal(frame["window_start_s"].to_numpy(), grid):
            raise InputError(str(files[client]), "", "its windows differ from the other clients'")
    rates = np.vstack([f["rate"].to_numpy(dtype=np.float64) for f in frames])
    cvs = np.vstack([f["cv"].to_numpy(dtype=np.float64) for f in frames])
    return clients, grid, rates, cvs


def _read_trace_file(path: Path) -> pd.DataFrame:
    try:
        frame = pd.read_csv(path, header=None, names=TRACE_COLUMNS, usecols=[0, 1, 2])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise InputError(str(path), "", f"not a ServeGen trace CSV: {str(exc).strip()}") from None
    numbers = frame.apply(pd.to_numeric, errors="coerce")
    bad = (
        numbers[["window_start_s", "rate"]].isna().any(axis=1) | (numbers["rate"] < 0)
    ).to_numpy()
    if bad.any():
        raise InputError(f"{path} line {int(np.argmax(bad)) + 1}", "", "bad window start or rate")
    return numbers


def _select_windows(grid: np.ndarray, start: int, count: int | None, label: str) -> Span:
    total = len(grid)
    count = total - start if count is None else count
    if count < 1:
        raise InputError(label, "windows", f"must be at least 1, not {count}")
    if start < 0 or start + count > total:
        last = start + count - 1
        raise InputError(
            label, "windows", f"windows {start}..{last} are outside the data (0..{total - 1})"
        )
    return Span(starts=grid[start : start + count].astype(np.float64), first=start)


def _rank(rates: np.ndarray, top: int, label: str) -> tuple[list[int], list[int]]:
    """The `top` busiest clients (ties: lower id first) and the other active ones."""
    requests = rates.sum(axis=1)
    active = np.flatnonzero(requests > 0)
    if not len(active):
        raise InputError(label, "windows", "no client sends requests in the selected windows")
    ranked = active[np.argsort(-requests[active], kind="stable")]
    return ranked[:top].tolist(), sorted(ranked[top:].tolist())


def _group(tenant_id, members, rates, cvs, clients, directory, span) -> Group:
    member_rates = rates[members]
    total = member_rates.sum(axis=0)
    cv_known = np.where(np.isfinite(cvs[members]) & (cvs[members] > 0), cvs[members], 0.0)
    weighted = (member_rates * cv_known).sum(axis=0)
    known_rate = (member_rates * (cv_known > 0)).sum(axis=0)
    # 1.0 (Poisson) where the window is idle or no member reports a CV
    cv = np.divide(weighted, known_rate, out=np.ones_like(total), where=known_rate > 0)
    pmfs = [
        (_client_lengths(directory, clients[i], span, rates[i]), rates[i].sum()) for i in members
    ]
    known = [(p, w) for p, w in pmfs if p is not None]
    lengths = _pool_lengths([p for p, _ in known], [w for _, w in known]) if known else None
    return Group(tenant_id, total, cv, lengths)


def _client_lengths(directory: Path, client: int, span: Span, rates: np.ndarray):
    path = directory / f"chunk-{client}-dataset.json"
    if not path.is_file():
        return None
    try:
        windows = {int(k): dict(v) for k, v in json.loads(path.read_text()).items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise InputError(str(path), "", f"not a ServeGen dataset file: {exc}") from None
    lengths = {key: _field_pmf(path, windows, name, span, rates) for key, name in FIELDS.items()}
    return None if any(p is None for p in lengths.values()) else lengths


def _field_pmf(path, windows: dict, field: str, span: Span, rates) -> Pmf | None:
    starts = sorted(k for k, v in windows.items() if str(v.get(field, "{}")).strip() != "{}")
    if not starts:
        return None
    keys = sorted(windows)
    length = min(np.diff(keys)) if len(keys) > 1 else np.inf
    overlapping = [k for k in starts if k < span.end_s and k + length > span.starts[0]]
    if not overlapping:
        before = [k for k in starts if k <= span.starts[0]]
        overlapping = [before[-1] if before else starts[0]]
    weights = [rates[(span.starts >= k) & (span.starts < k + length)].sum() for k in overlapping]
    pmfs = [_parse_pmf(path, windows[k][field], f"{k}.{field}") for k in overlapping]
    return _pool(pmfs, weights)


def _parse_pmf(path: Path, text: str, where: str) -> Pmf:
    pairs = _literal_pairs(text)
    if pairs is None:
        raise InputError(str(path), where, "not a Python dict literal {bin: probability}")
    try:
        values = np.array([int(k) if str(k).isdigit() else -1 for k in pairs], dtype=np.int64)
        weights = np.array(list(pairs.values()), dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        values = weights = np.array([-1.0])  # reported just below
    if not len(values) or (values < 0).any() or not (np.isfinite(weights) & (weights >= 0)).all():
        raise InputError(str(path), where, "must map whole token counts to probabilities >= 0")
    if not weights.sum() > 0:
        raise InputError(str(path), where, "probabilities sum to 0")
    return _pool([Pmf(values, weights)], [1.0])


def _literal_pairs(text: str) -> dict | None:
    """The `{bin: probability}` literal as a dict.

    Quoting the integer keys makes it JSON, which parses some 20 times faster than
    `ast.literal_eval` (a full import reads thousands of these); anything else takes the slow,
    general path.
    """
    try:
        pairs = json.loads(QUOTE_KEYS.sub(r'\1"\2":', text))
    except ValueError:
        try:
            pairs = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return pairs if isinstance(pairs, dict) else None


def _pool(pmfs: list[Pmf], weights: list[float]) -> Pmf:
    """The mixture of PMFs with the given weights (equal ones if they are all zero)."""
    weights = np.asarray(weights, dtype=np.float64)
    if not weights.sum() > 0:
        weights = np.ones(len(pmfs))
    values = np.concatenate([p.values for p in pmfs])
    mass = np.concatenate(
        [p.weights / p.weights.sum() * w for p, w in zip(pmfs, weights, strict=True)]
    )
    unique, position = np.unique(values, return_inverse=True)
    total = np.bincount(position, weights=mass, minlength=len(unique))
    keep = total > 0
    return Pmf(unique[keep], total[keep] / total[keep].sum())


def _pool_lengths(lengths: list[dict[str, Pmf]], weights: list[float]) -> dict[str, Pmf]:
    return {key: _pool([item[key] for item in lengths], weights) for key in FIELDS}


def _fill_missing_lengths(groups: list[Group], label: str) -> list[Group]:
    """Tenants without PMFs take the pooled PMFs of all the others, by request share."""
    known = [g for g in groups if g.lengths is not None]
    if not known:
        raise InputError(label, "", "no dataset file has token lengths for the chosen clients")
    fallback = _pool_lengths([g.lengths for g in known], [g.rates.sum() for g in known])
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
