"""ServeGen token lengths: per-client `chunk-N-dataset.json` PMFs, chosen for a span and pooled.

A dataset file maps each window start (6 h windows) to PMF literals `{tokens: probability}` for
`input_tokens` and `output_tokens`; an empty literal `{}` means no data for that window.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simsched.errors import InputError
from simsched.workload.servegen_rates import Span

FIELDS = {"prefill_tokens": "input_tokens", "decode_tokens": "output_tokens"}
QUOTE_KEYS = re.compile(r"([{,]\s*)(\d+)\s*:")


@dataclass(frozen=True)
class Pmf:
    """An empirical distribution: ascending token counts and their probabilities (sum 1)."""

    values: np.ndarray
    weights: np.ndarray


Lengths = dict[str, Pmf]  # keyed by prefill_tokens / decode_tokens


def client_lengths(directory: Path, client: int, span: Span, rates: np.ndarray) -> Lengths | None:
    """The client's PMFs for the span, or None without a dataset file or a non-empty PMF."""
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
    return pool(pmfs, weights)


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
    return pool([Pmf(values, weights)], [1.0])


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


def pool(pmfs: list[Pmf], weights: list[float]) -> Pmf:
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


def pool_lengths(lengths: list[Lengths], weights: list[float]) -> Lengths:
    """Each field's PMFs pooled with the given weights."""
    return {key: pool([item[key] for item in lengths], weights) for key in FIELDS}
