"""Chain numbers of a trace's prefix blocks (workload/trace_chains.py) and how the Mooncake
reader feeds them (workload/prefix_sources.py)."""

from __future__ import annotations

import gc
import json
import random
from itertools import accumulate
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from simsched.errors import InputError
from simsched.workload import prefix_sources
from simsched.workload.formats import mooncake, read_trace
from simsched.workload.prefix_sources import mooncake_prefixes
from simsched.workload.prefixes import ChainIds, Prefix, collector_paused, compress_chains
from simsched.workload.trace_chains import chain_numbers


def _flat(rows: list[list[int]]) -> tuple[list[int], list[int]]:
    return [block for row in rows for block in row], [len(row) for row in rows]


def test_equal_prefixes_and_only_they_share_a_number() -> None:
    # by hand: the prefixes are (5), (5,6), (5,7), (5,6,8) and (6): five chains; block 6 after
    # 5 and block 6 at the root are different chains, as chained hashes are
    chains = chain_numbers(*_flat([[5, 6], [5, 7], [5, 6, 8], [6]]))
    n = chains.numbers.tolist()
    assert chains.count == 5
    assert sorted(set(n)) == [0, 1, 2, 3, 4]
    assert n[0] == n[2] == n[4]  # (5) in the first three rows
    assert n[1] == n[5]  # (5, 6) in rows 1 and 3
    assert len({n[0], n[1], n[3], n[6], n[7]}) == 5
    assert chains.starts.tolist() == [0, 2, 4, 7]


def test_chain_numbers_match_interning_every_prefix() -> None:
    # the brute force: a dict keyed by the whole prefix tuple, on random rows that share,
    # diverge and share again (small alphabets make repeats likely), some of them empty
    rng = random.Random(7)
    for _ in range(200):
        rows = []
        for _ in range(rng.randint(1, 12)):
            base = rng.choice([[], [1], [1, 2], [1, 3], [4]])
            rows.append(base + [rng.randint(0, 3) for _ in range(rng.randint(0, 5))])
        flat, lengths = _flat(rows)
        chains = chain_numbers(flat, lengths)
        brute: dict[tuple, int] = {}
        expected = [
            brute.setdefault(tuple(row[: i + 1]), len(brute))
            for row in rows
            for i in range(len(row))
        ]
        got = chains.numbers.tolist()
        # ids that are chained already are their own numbers, so some numbers below the
        # count may be unused; depth by depth, the count is exact
        assert chains.count >= len(brute)
        # the same partition of positions (the numbering itself may differ): the pairs
        # (brute-force number, chain number) form a one-to-one map
        pairs = set(zip(expected, got, strict=True))
        assert len(pairs) == len(set(expected)) == len(set(got))
        assert all(0 <= g < chains.count for g in got)


def test_chained_ids_are_their_own_numbers_and_others_are_not() -> None:
    # ids that are chained hashes already (each id names one whole prefix, as Mooncake's do):
    # numbered by the ids themselves, offset from the least; random ids per prefix, with gaps
    rng = random.Random(11)
    for _ in range(200):
        rows = [
            rng.choice([[], [1], [1, 2], [3]])
            + [rng.randint(0, 2) for _ in range(rng.randint(0, 4))]
            for _ in range(rng.randint(1, 10))
        ]
        prefixes = sorted({tuple(row[: i + 1]) for row in rows for i in range(len(row))})
        base = rng.randint(-5, 5)
        picks = rng.sample(range(2 * len(prefixes) + 1), len(prefixes))
        named = dict(zip(prefixes, picks, strict=True))
        hashed = [[base + named[tuple(row[: i + 1])] for i in range(len(row))] for row in rows]
        flat, lengths = _flat(hashed)
        chains = chain_numbers(flat, lengths)
        if flat and max(flat) - min(flat) < len(flat):  # few enough values: their own codes
            assert chains.numbers.tolist() == [block - min(flat) for block in flat]
        # either way, the same blocks share a number as share a whole prefix
        pairs = set(zip(flat, chains.numbers.tolist(), strict=True))
        assert len(pairs) == len(set(flat)) == len(set(chains.numbers.tolist()))
        assert all(0 <= n < chains.count for n in chains.numbers.tolist())


def test_an_id_after_two_different_ids_names_two_chains() -> None:
    # by hand: 6 follows 5 in one row and 7 in the other, and starts the third: three chains
    # for the one id, so the ids cannot be their own numbers
    chains = chain_numbers(*_flat([[5, 6], [7, 6], [6]]))
    n = chains.numbers.tolist()
    assert chains.count == 5
    assert len({n[1], n[3], n[4]}) == 3
    assert len(set(n)) == 5


def test_ids_beyond_int64_are_numbered_too() -> None:
    huge = 2**70
    chains = chain_numbers(*_flat([[huge, 1], [huge, 2], [huge + 1, 1]]))
    n = chains.numbers.tolist()
    assert chains.count == 5 and n[0] == n[2] and len(set(n)) == 5


def test_ids_start_where_the_interner_reserves_them() -> None:
    interner = ChainIds()
    head = interner.chain(0, "system")
    first = interner.reserve(3)
    after = interner.chain(0, "other")
    assert (head, first, after) == (1, 2, 5)  # 2, 3, 4 are the reserved ones


def _trace(path: Path, rows: list[str]) -> SimpleNamespace:
    path.write_text("\n".join(rows) + "\n")
    return SimpleNamespace(
        path=str(path),
        format="mooncake",
        cache_salt=None,
        start_s=None,
        duration_s=None,
        max_requests=None,
    )


def test_an_id_that_is_not_an_integer_is_refused_with_its_line(tmp_path: Path) -> None:
    good = json.dumps(
        {"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}
    )
    bad = json.dumps(
        {"timestamp": 1, "input_length": 1024, "output_length": 1, "hash_ids": [1, True]}
    )
    trace = _trace(tmp_path / "t.jsonl", [good, "", bad])
    with pytest.raises(InputError) as caught:
        mooncake_prefixes(trace, ChainIds(), {})
    assert "t.jsonl line 3" in str(caught.value)
    assert "hash_ids is not a list of integers" in str(caught.value)


def test_a_row_keeps_the_ids_its_prompt_covers_in_time_order(tmp_path: Path) -> None:
    rows = [
        {"timestamp": 5, "input_length": 600, "output_length": 1, "hash_ids": [1, 2, 3]},
        {"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]},
    ]
    trace = _trace(tmp_path / "t.jsonl", [json.dumps(row) for row in rows])
    interner = ChainIds()
    first, second = mooncake_prefixes(trace, interner, {})
    # time order: the 1024-token row first; 600 tokens cover two 512-token ids (the third
    # starts past the prompt), the second ending at the prompt's last token
    assert first.ends == [512, 1024] and second.ends == [512, 600]
    assert first.ids == second.ids  # the same two chained ids
    assert interner.chain(0, "next") == 1 + 3  # three chains reserved: (1), (1,2), (1,2,3)


def test_the_ids_come_from_the_readers_parse_and_a_parse_of_their_own_agrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {"timestamp": 5, "input_length": 600, "output_length": 1, "hash_ids": [1, 2, 3]},
        {"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]},
        {"timestamp": 2, "input_length": 100, "output_length": 1},
    ]
    trace = _trace(tmp_path / "t.jsonl", [json.dumps(row) for row in rows])
    parses: list[str] = []
    parse = prefix_sources._parse_rows

    def counted(text: str) -> object:
        parses.append(text)
        return parse(text)

    monkeypatch.setattr(prefix_sources, "_parse_rows", counted)
    read_trace(trace.path, "mooncake", prefix_rows=True)  # as the workload does with caching
    shared = mooncake_prefixes(trace, ChainIds(), {})
    assert parses == []  # no row parsed a second time
    read_trace(trace.path, "mooncake")  # caching off: the reader keeps nothing
    own = mooncake_prefixes(trace, ChainIds(), {})
    assert len(parses) == 1  # so the prefix source parsed the file itself
    assert [(p.ids, p.ends) for p in shared] == [(p.ids, p.ends) for p in own]
    assert [p.ends for p in own] == [[512, 1024], [], [512, 600]]
    files: dict = {}
    for _tenant in range(2):  # two tenants replaying one file: its ids are chained once
        read_trace(trace.path, "mooncake", prefix_rows=True)
        mooncake_prefixes(trace, ChainIds(), files)
    assert mooncake.take_rows(Path(trace.path).read_text()) is None  # the second read: not kept


def _prompts(rows: list[list[int]], ends_of) -> np.ndarray:
    interner = ChainIds()
    out = np.empty(len(rows), dtype=object)
    for i, row in enumerate(rows):
        ids, parent = [], 0
        for block in row:
            parent = interner.chain(parent, block)
            ids.append(parent)
        out[i] = Prefix(ids, ends_of(row))
    return out


def test_joining_unbranched_chains_keeps_which_blocks_are_equal() -> None:
    # the property compress_chains promises: two blocks (of any prompts) have equal keys after
    # exactly when they had before; the brute force compares every pair of positions
    rng = random.Random(3)
    for _ in range(100):
        rows = [
            rng.choice([[], [1], [1, 2], [1, 2, 3]])
            + [rng.randint(0, 2) for _ in range(rng.randint(0, 3))]
            for _ in range(rng.randint(1, 8))
        ]
        prompts = _prompts(rows, lambda row: [8 * (i + 1) for i in range(len(row))])
        before = [p.keys(4) for p in prompts]
        compress_chains(prompts)
        after = [p.keys(4) for p in prompts]
        flat_before = [k for keys in before for k in keys]
        flat_after = [k for keys in after for k in keys]
        assert len(flat_after) == len(flat_before)
        pairs = set(zip(flat_before, flat_after, strict=True))
        assert len(pairs) == len(set(flat_before)) == len(set(flat_after))


def test_exactly_the_chains_with_one_successor_and_one_end_are_joined() -> None:
    # brute force over every occurrence of every chain: a chain joins the next one when all
    # its occurrences have the same successor and end and none ends a prompt; segments of
    # random widths give one chain different ends in different prompts
    rng = random.Random(5)
    for _ in range(300):
        rows = [
            [rng.randint(0, 2) for _ in range(rng.randint(0, 4))] for _ in range(rng.randint(1, 8))
        ]
        prompts = _prompts(rows, lambda row: list(accumulate(rng.choice([8, 8, 5]) for _ in row)))
        seen: dict[int, set] = {}
        for prompt in prompts:
            for i, (chain, end) in enumerate(zip(prompt.ids, prompt.ends, strict=True)):
                after = prompt.ids[i + 1] if i + 1 < len(prompt.ids) else None
                seen.setdefault(chain, set()).add((after, end))
        joined = {c for c, s in seen.items() if len(s) == 1 and next(iter(s))[0] is not None}
        expected = [
            [(c, e) for c, e in zip(p.ids, p.ends, strict=True) if c not in joined] for p in prompts
        ]
        compress_chains(prompts)
        assert [list(zip(p.ids, p.ends, strict=True)) for p in prompts] == expected


def test_a_chain_always_followed_by_the_same_one_is_joined_into_it() -> None:
    # by hand: (1) is always followed by (1,2), which ends two prompts and is followed by
    # (1,2,3) in one: (1) joins (1,2); (1,2) stays (it ends a prompt), and so does (1,2,3)
    prompts = _prompts(
        [[1, 2], [1, 2, 3], [1, 2]], lambda row: [8 * (i + 1) for i in range(len(row))]
    )
    ids_before = [list(p.ids) for p in prompts]
    compress_chains(prompts)
    assert [p.ends for p in prompts] == [[16], [16, 24], [16]]
    assert [p.ids for p in prompts] == [ids[1:] for ids in ids_before]


def test_the_collector_is_paused_while_prefixes_are_built_and_restored_after() -> None:
    assert gc.isenabled()
    with pytest.raises(KeyError), collector_paused():
        assert not gc.isenabled()
        raise KeyError("a failed build")  # still restored
    assert gc.isenabled()
    gc.disable()  # a caller that paused it itself keeps it paused
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
