"""summary.json's figures for a run on `cluster.pools`: per pool, and the KV transfers.

`request_skew` of a P/D run is taken over the replicas where requests start (mixed and prefill):
a decode replica is never where a request is placed, so counting it would call any P/D layout
skewed. Transfer times are per handed-off request, from booking the decode blocks to the end of
the transfer (`bytes * 8 / (gbps * 1e6) + latency_ms`); the wait for decode blocks before it is
not in them.

TTFT in a P/D run is the client's: the first token streamed by the decode replica, after the
wait for decode blocks, the transfer and the decode replica's first step (vLLM's NIXL connector
behind llm-d). The prefill side's first token, DistServe's TTFT, is kept apart: the requests'
`prefill_ttft_ms` column (equal to `ttft_ms` for a request never handed off) and, over the
handed-off requests, `kv_transfer.prefill_ttft_p50_ms` / `p99_ms` beside the client's
`ttft_p50_ms` / `p99_ms`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simsched.results.percentiles import nearest_rank
from simsched.results.rounding import python_round
from simsched.results.utilisation import request_skew

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
            # the pool's own router balances these: its skew, as the run's below
            pools[name]["request_skew"] = request_skew(placed)
        first += count
    figures = {**usage, "request_skew": request_skew(entry_counts), "pools": pools}
    if transfers is not None and transfers.ms:
        figures["kv_transfer"] = transfer_summary(transfers)
    return figures


def prefill_ttft_column(frame: pd.DataFrame, transfers: Any) -> pd.Series:
    """Per request: TTFT where the prefill replica computed the first token; the client's
    `ttft_ms` for a request never handed off (its first token never left its replica)."""
    column = frame["ttft_ms"].copy()
    handed = handed_off(frame, transfers)
    if handed.any():
        prefilled = transfers.prefill_token_ms
        instants = np.fromiter((prefilled[seq] for seq in frame["_seq"][handed]), np.float64)
        # rounded as ttft_ms is (results/rounding.py)
        column[handed] = python_round(instants - frame["arrival_ms"].to_numpy()[handed], 2)
    return column


def handed_off(frame: pd.DataFrame, transfers: Any) -> np.ndarray:
    """Which rows are requests a prefill replica handed off."""
    prefilled = transfers.prefill_token_ms
    return np.fromiter((seq in prefilled for seq in frame["_seq"]), dtype=bool, count=len(frame))


def add_ttft_sides(figures: dict[str, Any], frame: pd.DataFrame, transfers: Any) -> None:
    """`kv_transfer` gains the two TTFTs of the handed-off requests (nearest rank)."""
    moved = figures.get("kv_transfer")
    if moved is None:
        return
    handed = frame[handed_off(frame, transfers)]
    for key, column in (("prefill_ttft", "prefill_ttft_ms"), ("ttft", "ttft_ms")):
        values = handed[column].to_numpy(dtype=np.float64)
        for rank in (50, 99):
            moved[f"{key}_p{rank}_ms"] = round(float(nearest_rank(values, rank)), DIGITS)


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
