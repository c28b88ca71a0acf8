"""Prefix segments for a tenant's requests: trace `hash_ids` and a shared system prompt.

- Mooncake traces carry `hash_ids`, one id per 512-token block of the prompt (the last one
  covers the remainder). They are chained here from the file's own ids, so a block id means the
  same tokens before it too, whichever tenant replays the file (unless the tenants give
  different `cache_salt`s: then their keys differ, as with vLLM's cache_salt).
- `prefix: {tokens: N, groups: K}` puts one of K system prompts of N tokens in front of every
  request of the tenant (drawn uniformly per request from the tenant's own prefix stream; K = 1
  means one prompt shared by all). The prompt then has N + the drawn `prefill_tokens` tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from simsched.config.yaml_io import read_text
from simsched.errors import InputError, display_path
from simsched.workload.formats.checks import fail
from simsched.workload.formats.mooncake import ParsedRows, drop_rows, prefix_values, take_rows
from simsched.workload.formats.window import TraceColumns, window
from simsched.workload.prefixes import ChainIds, Prefix, prepend
from simsched.workload.table import RequestTable
from simsched.workload.trace_chains import TraceChains, chain_numbers

MOONCAKE_BLOCK = 512  # tokens per hash id in the Mooncake FAST'25 traces


def with_prefixes(
    table: RequestTable,
    tenant,
    interner: ChainIds,
    rng: np.random.Generator,
    trace_ids: bool = True,
    files: dict | None = None,
) -> RequestTable:
    """The tenant's table with its `prefix` column (unchanged if the tenant has no source).
    `trace_ids`: read a Mooncake file's `hash_ids` (only when some setting uses prefixes, so
    that a file whose ids are missing or null replays as before without caching). `files`:
    the hash ids read so far for this workload, by file, so tenants replaying one file read it
    once."""
    trace = tenant.trace
    own = None
    if trace_ids and trace is not None and trace.format == "mooncake":
        # built with the cyclic collector paused: `build_workload` pauses it for the whole build
        own = mooncake_prefixes(trace, interner, {} if files is None else files)
    system = getattr(tenant, "prefix", None)
    if own is None and system is None:
        return table
    count = len(table)
    prefixes = np.empty(count, dtype=object)
    prefill = table.prefill_tokens
    if system is not None:
        group = rng.integers(0, system.groups, count) if system.groups > 1 else np.zeros(count)
        heads = [interner.chain(0, ("system", tenant.id, g)) for g in range(system.groups)]
        prefill = prefill + system.tokens
        for i, g in enumerate(group.tolist()):
            mine = own[i] if own is not None else None
            prefixes[i] = prepend((heads[int(g)], system.tokens), mine, interner)
    else:
        prefixes[:] = own
    return RequestTable(
        request_id=table.request_id,
        tenant=table.tenant,
        lane=table.lane,
        arrival_ms=table.arrival_ms,
        prefill_tokens=prefill,
        decode_tokens=table.decode_tokens,
        prefix=prefixes,
    )


def mooncake_prefixes(trace, interner: ChainIds, files: dict) -> list[Prefix]:
    """One `Prefix` per replayed row, in the order (and window) `read_trace` keeps them."""
    label = display_path(trace.path)
    resolved = str(Path(trace.path).resolve())
    if resolved not in files:
        files[resolved] = _read_hash_ids(Path(trace.path), label)
    else:
        drop_rows()  # this tenant's read of the file, not wanted: its ids are chained above
    times, lengths, chains = files[resolved]
    # one id range per (file, cache_salt): tenants replaying one file with one salt share
    # their chains, as with vLLM's cache_salt; another salt gets ids no other chain has
    source = (resolved, trace.cache_salt)
    if source not in files:
        files[source] = interner.reserve(chains.count)
    first_id = files[source]
    order = np.argsort(times, kind="stable")
    rows = np.arange(len(times), dtype=np.int64)[order]
    columns = TraceColumns(times[order] - times[order][0], rows, rows)
    kept = window(columns, label, trace.start_s, trace.duration_s, trace.max_requests)
    rows = kept.prefill_tokens
    full_ends = list(
        range(
            MOONCAKE_BLOCK,
            MOONCAKE_BLOCK * (int(chains.lengths.max(initial=0)) + 1),
            MOONCAKE_BLOCK,
        )
    )
    ids, starts, sizes = chains.ids(first_id), chains.starts.tolist(), chains.lengths.tolist()
    lengths = lengths.tolist()
    return [_prefix(ids, starts[r], sizes[r], lengths[r], full_ends) for r in rows.tolist()]


def _prefix(ids: list[int], start: int, size: int, length: int, full_ends: list) -> Prefix:
    """The row whose `size` chain ids start at `ids[start]`, for a prompt of `length` tokens.
    `full_ends[i]` is `(i + 1) * 512`: shared int objects, not one per block per prompt.
    Ids past the prompt's last token cover nothing and are dropped."""
    count = min(size, -(-length // MOONCAKE_BLOCK))
    ends = full_ends[:count]
    if count and ends[-1] > length:
        ends[-1] = length
    return Prefix(ids[start : start + count], ends)


def _read_hash_ids(path: Path, label: str) -> tuple[np.ndarray, np.ndarray, TraceChains]:
    """Every row's time, prompt length and chained block ids (`trace_chains.py`), from the
    rows the trace reader has just parsed (parsed again only if the file is not the one it
    read last)."""
    text = read_text(path, "trace file")
    parsed = take_rows(text) or _parse_rows(text)
    times, lengths, flat, counts = [], [], [], []
    for number, (timestamp, length, ids) in zip(parsed.lines, parsed.raw, strict=True):
        if ids is None:
            ids = []  # no prefix ids for this row: nothing of it can hit
        if not isinstance(ids, list):
            raise fail(label, number, "hash_ids is not a list of integers")
        times.append(float(timestamp))
        lengths.append(int(length))
        flat += ids
        counts.append(len(ids))
    if not times:
        raise InputError(label, "", "holds no requests")
    if not set(map(type, flat)) <= {int}:  # bool is no id (one pass in C; the line only if bad)
        raise fail(
            label, _first_bad_row(parsed.lines, flat, counts), "hash_ids is not a list of integers"
        )
    return np.asarray(times), np.asarray(lengths), chain_numbers(flat, counts)


def _parse_rows(text: str) -> ParsedRows:
    """The rows of a file the reader did not read last (read_trace has already checked every
    row's JSON and keys)."""
    lines, raw = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            record = json.loads(line)
            lines.append(number)
            raw.append(prefix_values(record))
    return ParsedRows(text, lines, raw)


def _first_bad_row(lines: list[int], flat: list, counts: list[int]) -> int:
    """The line of the first row whose hash_ids hold something other than an integer."""
    start = 0
    for number, count in zip(lines, counts, strict=True):
        if any(type(x) is not int for x in flat[start : start + count]):
            return number
        start += count
    raise AssertionError("no row holds a non-integer id")  # the caller found one
