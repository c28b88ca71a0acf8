"""Write a noisy-neighbor-like trace: three tenants, Poisson arrivals, a chosen load.

    python benchmarks/make_trace.py OUT.csv --requests 500000 [--load 0.9] [--seed 7]

The tenants are the noisy neighbor's (two interactive chat/IDE tenants and a batch RAG tenant,
with the same request sizes); their arrival rates are set so that the offered work is `load`
times the token server's throughput (45 service tokens/ms), split 30/20/50 between them.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

TENANTS = [  # id, prefill, decode, share of the offered work
    ("tenant_chat_pro", 280, 90, 0.3),
    ("tenant_ide_assist", 420, 60, 0.2),
    ("tenant_batch_rag", 3200, 350, 0.5),
]
THROUGHPUT_TOKENS_PER_MS = 45.0
DECODE_WEIGHT = 4


def make_trace(requests: int, load: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rates = [  # requests per ms
        share * load * THROUGHPUT_TOKENS_PER_MS / (prefill + DECODE_WEIGHT * decode)
        for _, prefill, decode, share in TENANTS
    ]
    total = sum(rates)
    counts = rng.multinomial(requests, [r / total for r in rates])
    frames = []
    for (tenant, prefill, decode, _), rate, count in zip(TENANTS, rates, counts, strict=True):
        arrivals = np.cumsum(rng.exponential(1.0 / rate, size=count)).round(3)
        frames.append(
            pd.DataFrame(
                {
                    "request_id": [f"{tenant}-{i:07d}" for i in range(count)],
                    "tenant_id": tenant,
                    "arrival_ms": arrivals,
                    "prefill_tokens": prefill,
                    "decode_tokens": decode,
                }
            )
        )
    return pd.concat(frames).sort_values(["arrival_ms", "request_id"], kind="stable")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--requests", type=int, default=500_000)
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    make_trace(args.requests, args.load, args.seed).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
