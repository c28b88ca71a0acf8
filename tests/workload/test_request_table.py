"""`merge_sorted`: one table already in order is copied, not round-tripped through pandas."""

from __future__ import annotations

import numpy as np

from simsched.workload.table import RequestTable, merge_sorted


def table(ids: list[str], arrivals: list[int], prefix: bool = False) -> RequestTable:
    n = len(ids)
    return RequestTable(
        request_id=np.array(ids, dtype=object),
        tenant=np.zeros(n, dtype=np.int32),  # narrower types than a merged table's
        lane=np.ones(n, dtype=np.int32),
        arrival_ms=np.array(arrivals, dtype=np.int64),
        prefill_tokens=np.arange(1, n + 1, dtype=np.int32),
        decode_tokens=np.arange(n, 0, -1, dtype=np.int32),
        prefix=np.array([None] * n, dtype=object) if prefix else None,
    )


def same(a: RequestTable, b: RequestTable) -> None:
    for name in ("request_id", "tenant", "lane", "arrival_ms", "prefill_tokens", "decode_tokens"):
        left, right = getattr(a, name), getattr(b, name)
        assert left.dtype == right.dtype, name
        assert left.tolist() == right.tolist(), name
    assert (a.prefix is None) == (b.prefix is None)


def test_one_ordered_table_gets_the_types_the_pandas_path_gives() -> None:
    for prefix in (False, True):
        single = table(["r1", "r2", "r3"], [0, 5, 5], prefix)
        same(merge_sorted([single]), RequestTable.from_frame(single.to_frame()))


def test_the_copy_does_not_share_the_input_arrays() -> None:
    single = table(["r1", "r2"], [0, 5])
    merged = merge_sorted([single, table([], [])])  # an empty table does not count
    merged.prefill_tokens[0] = 99
    assert single.prefill_tokens[0] == 1


def test_one_table_out_of_order_is_still_sorted() -> None:
    # equal arrivals order by request id, as the reference orders them
    merged = merge_sorted([table(["r2", "r1", "r0"], [5, 5, 0])])
    assert merged.request_id.tolist() == ["r0", "r1", "r2"]
    assert merged.arrival_ms.tolist() == [0.0, 5.0, 5.0]
