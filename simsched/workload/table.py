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
    filled = [t for t in tables if len(t)]
    if len(filled) == 1 and _in_order(filled[0].arrival_ms, filled[0].request_id):
        return _copied(filled[0])  # one table in order (a trace): no round trip through pandas
    frames = [t.to_frame() for t in filled]
    if any("prefix" in f for f in frames):  # requests without a prefix source get None
        for f in frames:
            if "prefix" not in f:
                f["prefix"] = np.full(len(f), None, dtype=object)
    if not frames:
        return RequestTable.from_frame(_empty_frame())
    frame = pd.concat(frames, ignore_index=True)
    if not _in_order(frame["arrival_ms"].to_numpy(), frame["request_id"].to_numpy()):
        frame = frame.sort_values(["arrival_ms", "request_id"], kind="stable", ignore_index=True)
    return RequestTable.from_frame(frame)


def _copied(table: RequestTable) -> RequestTable:
    """The table's columns copied with the types `from_frame` gives them."""
    return RequestTable(
        request_id=table.request_id.astype(object),
        tenant=table.tenant.astype(np.int64),
        lane=table.lane.astype(np.int64),
        arrival_ms=table.arrival_ms.astype(np.float64),
        prefill_tokens=table.prefill_tokens.astype(np.int64),
        decode_tokens=table.decode_tokens.astype(np.int64),
        prefix=None if table.prefix is None else table.prefix.astype(object),
    )


def _in_order(arrival: np.ndarray, ids: np.ndarray) -> bool:
    """Already sorted? Traces usually are, and sorting by a string column is the slow part."""
    step = np.diff(arrival)
    if (step < 0).any():
        return False
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
