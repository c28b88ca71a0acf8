"""Issue 10 item 13 (traces): malformed trace files are refused with the file and line.

Rows with more or fewer fields than the header, a column named twice, negative times, a time
before 1677 (the int64-nanosecond clock's start), JSON nested a thousand deep and symlink loops
used to be accepted, dropped silently, or end in a traceback.

How fast is checked by `make bench` (row budget), not here: a wall-clock assertion flakes
on a loaded machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.config.loading import load_scenario
from simsched.errors import InputError
from simsched.workload.build import build_workload
from simsched.workload.formats import read_length_pairs, read_trace

STUDY = Path(__file__).resolve().parents[2] / "scenarios" / "noisy_neighbor.yaml"
CSV_HEADER = "arrival_ms,prefill_tokens,decode_tokens\n"
AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def _refused(tmp_path: Path, name: str, text: str, format: str, *words: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_trace(path, format)
    message = str(info.value)
    for word in words:
        assert word in message, message
    return message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (CSV_HEADER + "0,10,5\n5,10,5,99\n", ("line 3", "4 fields")),
        (CSV_HEADER + "0,10,5\n5\n7,10,5\n", ("line 3", "1 field")),
        ("x," + CSV_HEADER + "a,0,10,5\nb\n", ("line 3", "1 field")),
        ("arrival_ms,arrival_ms,prefill_tokens,decode_tokens\n0,1,10,5\n", ("header", "twice")),
        (CSV_HEADER + "0,10,5\n-5,10,5\n", ("line 3", "negative")),
    ],
)
def test_bad_csv_rows_are_refused(tmp_path: Path, text: str, words: tuple[str, ...]) -> None:
    _refused(tmp_path, "t.csv", text, "csv", *words)


@pytest.mark.parametrize("ending", ["\r", "\r\n"])
@pytest.mark.parametrize(
    ("format", "header"),
    [("csv", CSV_HEADER), ("azure2023", AZURE_HEADER), ("burstgpt", None)],
)
def test_cr_line_endings_read_as_line_breaks(tmp_path: Path, format, header, ending) -> None:
    if format == "azure2023":
        rows = ["2023-11-16 18:15:46.0,10,5", "2023-11-16 18:15:47.0,20,6"]
    elif format == "burstgpt":
        header = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        rows = ["0,ChatGPT,10,5,15,API log", "1,ChatGPT,20,6,26,API log"]
    else:
        rows = ["0,10,5", "1000,20,6"]
    path = tmp_path / "t.csv"
    path.write_bytes((header.strip() + ending + ending.join(rows) + ending).encode())
    columns = read_trace(path, format)
    assert columns.prefill_tokens.tolist() == [10, 20]
    assert columns.decode_tokens.tolist() == [5, 6]


def test_a_stray_cr_is_a_line_break_named_by_line(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes((CSV_HEADER + "0,10,5\n7,1\r0,5\n").encode())
    with pytest.raises(InputError, match="line 3"):
        read_trace(path, "csv")


def test_an_unreadable_csv_record_names_its_line(tmp_path: Path) -> None:
    # a field beyond the csv module's limit raises csv.Error, which used to escape
    _refused(tmp_path, "t.csv", CSV_HEADER + "0,10,5\n" + "9" * 200_000 + ",1,1\n", "csv",
             "line 3", "not a readable CSV row")  # fmt: skip


def test_the_scenario_trace_reads_cr_line_endings(tmp_path: Path) -> None:
    from simsched.workload.trace_csv import read_trace_csv

    tenants = load_scenario(STUDY).tenants
    path = tmp_path / "t.csv"
    lines = ["request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens",
             f"r1,{tenants[0].id},0,10,5"]  # fmt: skip
    path.write_bytes(("\r".join(lines) + "\r").encode())
    table = read_trace_csv(path, tenants)
    assert len(table) == 1
    huge = f"r2,{tenants[0].id}," + "9" * 200_000 + ",1,1"
    path.write_bytes(("\n".join([*lines, huge]) + "\n").encode())
    with pytest.raises(InputError, match="line 3"):
        read_trace_csv(path, tenants)


def test_blank_lines_are_still_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(CSV_HEADER + "0,10,5\n\n7,10,5\n")
    assert len(read_trace(path, "csv").arrival_ms) == 2


@pytest.mark.parametrize("stamp", ["1500-01-01 00:00:00.0000000", "9999-01-01 00:00:00"])
def test_an_azure_time_outside_the_nanosecond_clock_is_refused(tmp_path: Path, stamp: str) -> None:
    text = AZURE_HEADER + f"2023-11-16 18:15:46.6805900,10,5\n{stamp},10,5\n"
    _refused(tmp_path, "a.csv", text, "azure2023", "line 3", stamp[:4], "1678")


def test_deeply_nested_mooncake_json_is_refused(tmp_path: Path) -> None:
    line = '{"timestamp": 0, "input_length": 5, "output_length": 1, "x": ' + "[" * 100_000
    line += "]" * 100_000 + "}\n"
    _refused(tmp_path, "m.jsonl", line, "mooncake", "line 1")


def test_mooncake_keys_given_twice_and_negative_times_are_refused(tmp_path: Path) -> None:
    twice = '{"timestamp": 0, "timestamp": 5, "input_length": 5, "output_length": 1}\n'
    _refused(tmp_path, "m.jsonl", twice, "mooncake", "line 1", "timestamp")
    negative = '{"timestamp": -3, "input_length": 5, "output_length": 1}\n'
    _refused(tmp_path, "n.jsonl", negative, "mooncake", "line 1", "negative")


def test_a_symlink_loop_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.csv").symlink_to(tmp_path / "b.csv")
    (tmp_path / "b.csv").symlink_to(tmp_path / "a.csv")
    with pytest.raises(InputError, match="a.csv"):
        read_length_pairs(tmp_path / "a.csv", "csv")
    scenario = tmp_path / "x.yaml"
    scenario.write_text(
        "tenants:\n  - id: t\n    arrivals: {kind: periodic, interval_ms: 1, count: 3}\n"
        "    prefill_tokens: {dist: trace, path: a.csv}\n    decode_tokens: 3\n"
    )
    with pytest.raises(InputError, match="a.csv"):
        build_workload(load_scenario(scenario))


@pytest.mark.parametrize(
    ("field", "words"),
    [
        ('"input_length": ' + "9" * 5000, ("line 2", "not a readable JSON value")),
        ('"input_length": ' + "9" * 400, ("line 2", "input_length is far too large")),
        ('"input_length": 5, "hash_ids": [' + "7" * 5000 + "]", ("line 2", "JSON value")),
    ],
)
def test_a_huge_mooncake_integer_is_refused_by_line(tmp_path: Path, field, words) -> None:
    first = '{"timestamp": 0, "input_length": 10, "output_length": 5}\n'
    second = '{"timestamp": 1, "output_length": 5, ' + field + "}\n"
    _refused(tmp_path, "m.jsonl", first + second, "mooncake", *words)
