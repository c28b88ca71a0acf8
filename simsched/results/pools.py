"""summary.json's figures for a run on `cluster.pools`: per pool, and the KV transfers.

`request_skew` of a P/D run is taken over the replicas where requests start (mixed and prefill):
a decode replica is never where a request is placed, so counting it would call any P/D layout
skewed. Transfer times are per handed-off request, from booking the decode blocks to the end of
the transfer (`bytes * 8 / (gbps * 1e6) + latency_ms`); the wait for decode blocks before it is
not in them, but is in TPOT.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simsched.results.percentiles import nearest_rank

DIGITS = 4


def add_pool_figures(usage: dict[str, Any], layout: list, transfers: Any) -> dict[str, Any]:
    """The utilisation block with `pools` (replica numbers and requests per pool), the request
    skew over entry replicas, and `kv_transfer` when some request was handed off."""
    replicas = usage["replicas"]
    pools, first = {}, 0
    entry_counts = []
    for name, role, count in layout:
        numbers = [str(i) for i in range(first, first + count)]
        placed = [replicas[n]["requests"] for n in numbers]
        pools[name] = {"role": role, "replicas": numbers, "requests": sum(placed)}
        if role != "decode":
            entry_counts += placed
        first += count
    mean = sum(entry_counts) / len(entry_counts) if entry_counts else 0
    skew = round(max(entry_counts) / mean, DIGITS) if mean else None
    figures = {**usage, "request_skew": skew, "pools": pools}
    if transfers is not None and transfers.ms:
        figures["kv_transfer"] = transfer_summary(transfers)
    return figures


def transfer_summary(transfers: Any) -> dict[str, Any]:
    ms = np.asarray(transfers.ms, dtype=np.float64)
    nbytes = np.asarray(transfers.nbytes, dtype=np.int64)
    return {
        "transfers": len(ms),
        "p50_ms": round(float(nearest_rank(ms, 50)), DIGITS),
        "p99_ms": round(float(nearest_rank(ms, 99)), DIGITS),
        "bytes_total": int(nbytes.sum()),
        "bytes_per_transfer_mean": round(float(nbytes.mean()), 1),
    }
