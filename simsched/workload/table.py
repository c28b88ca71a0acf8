"""`RequestTable`: a workload as columns, sorted in the reference's global order.

Workloads are generated and read as whole numpy columns (vectorized, so a million requests cost
a fraction of the simulation) and only become `Request` objects one at a time, as the feed
delivers them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class RequestTable:
    request_id: np.ndarray  # str
    tenant: np.ndarray  # int, index into the scenario's tenants
    lane: np.ndarray  # int, 0 interactive / 1 batch
    arrival_ms: np.ndarray  # float
    prefill_tokens: np.ndarray  # int
    decode_tokens: np.ndarray  # int
    prefix: np.ndarray | None = None  # object: a `Prefix` or None per request (prefixes.py)

    def __len__(self) -> int:
        return len(self.arrival_ms)

    def to_frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(
            {
                "request_id": self.request_id,
                "tenant": self.tenant,
                "lane": self.lane,
                "arrival_ms": self.arrival_ms,
                "prefill_tokens": self.prefill_tokens,
                "decode_tokens": self.decode_tokens,
            }
        )
        if self.prefix is not None:
            frame["prefix"] = self.prefix
        return frame

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> RequestTable:
        return cls(
            request_id=frame["request_id"].to_numpy(dtype=object),
            tenant=frame["tenant"].to_numpy(dtype=np.int64),
            lane=frame["lane"].to_numpy(dtype=np.int64),
            arrival_ms=frame["arrival_ms"].to_numpy(dtype=np.float64),
            prefill_tokens=frame["prefill_tokens"].to_numpy(dtype=np.int64),
            decode_tokens=frame["decode_tokens"].to_numpy(dtype=np.int64),
            prefix=frame["prefix"].to_numpy(dtype=object) if "prefix" in frame else None,
        )


def merge_sorted(tables: list[RequestTable]) -> RequestTable:
    """All requests in one table, ordered by (arrival_ms, request_id) as the reference orders."""
    frames = [t.to_frame() for t in tables if len(t)]
    if any("prefix" in f for f in frames):  # requests without a prefix source get None
        for f in frames:
            if "prefix" not in f:
                f["prefix"] = np.full(len(f), None, dtype=object)
    if not frames:
        return RequestTable.from_frame(_empty_frame())
    frame = pd.concat(frames, ignore_index=True)
    if not _in_order(frame):
        frame = frame.sort_values(["arrival_ms", "request_id"], kind="stable", ignore_index=True)
    return RequestTable.from_frame(frame)


def _in_order(frame: pd.DataFrame) -> bool:
    """Already sorted? Traces usually are, and sorting by a string column is the slow part."""
    arrival = frame["arrival_ms"].to_numpy()
    step = np.diff(arrival)
    if (step < 0).any():
        return False
    ids = frame["request_id"].to_numpy()
    return all(ids[i] < ids[i + 1] for i in np.flatnonzero(step == 0).tolist())


def _empty_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "request_id": pd.Series([], dtype=object),
            "tenant": pd.Series([], dtype=np.int64),
            "lane": pd.Series([], dtype=np.int64),
            "arrival_ms": pd.Series([], dtype=np.float64),
            "prefill_tokens": pd.Series([], dtype=np.int64),
            "decode_tokens": pd.Series([], dtype=np.int64),
        }
    )
