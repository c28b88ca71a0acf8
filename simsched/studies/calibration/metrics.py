"""The figures a calibration case compares: latency statistics and throughputs of a run.

Latencies are over the requests served (status 200): `p50_`, `mean_` and `p99_` of `ttft_ms`,
`tpot_ms` and `e2e_ms` (percentiles by linear interpolation, as vLLM's benchmark reports them).
Throughputs are over the span from the first arrival to the last finish (`span_ms`): `req_s`,
`output_tok_s` (decode tokens) and `total_tok_s` (prompt and decode tokens).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

LATENCIES = ("ttft_ms", "tpot_ms", "e2e_ms")
STATS = {"p50": lambda v: float(np.percentile(v, 50)), "mean": np.mean}
STATS["p99"] = lambda v: float(np.percentile(v, 99))
METRICS = tuple(f"{stat}_{lat}" for lat in LATENCIES for stat in ("p50", "mean", "p99")) + (
    "req_s",
    "output_tok_s",
    "total_tok_s",
    "span_ms",
)
# metric -> (key in a `vllm bench serve --save-result` JSON, factor to our unit)
_VLLM_LAT = {"ttft_ms": "ttft_ms", "tpot_ms": "tpot_ms", "e2e_ms": "e2el_ms"}
_VLLM_STAT = {"p50": "median", "mean": "mean", "p99": "p99"}
VLLM_KEYS = {
    f"{stat}_{lat}": (f"{_VLLM_STAT[stat]}_{key}", 1.0)
    for lat, key in _VLLM_LAT.items()
    for stat in ("p50", "mean", "p99")
}
VLLM_KEYS |= {
    "req_s": ("request_throughput", 1.0),
    "output_tok_s": ("output_throughput", 1.0),
    "total_tok_s": ("total_token_throughput", 1.0),
    "span_ms": ("duration", 1000.0),
}


def metric(frame: pd.DataFrame, name: str) -> float:
    """One figure of a variant's per-request frame; NaN if no request was served."""
    served = frame[frame["status_code"] == 200]
    if served.empty:
        return float("nan")
    if name in ("req_s", "output_tok_s", "total_tok_s", "span_ms"):
        span = float(served["finish_ms"].max() - frame["arrival_ms"].min())
        if name == "span_ms":
            return span
        count = {
            "req_s": len(served),
            "output_tok_s": served["decode_tokens"].sum(),
            "total_tok_s": served["decode_tokens"].sum() + served["prefill_tokens"].sum(),
        }[name]
        return float(count) / span * 1000.0 if span > 0 else float("nan")
    stat, lat = name.split("_", 1)
    values = served[lat].dropna().to_numpy()
    return float(STATS[stat](values)) if len(values) else float("nan")
