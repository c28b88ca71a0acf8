"""Trace readers (`formats.py`) and the `tenants[i].trace` model (`trace_specs.py`).

How fast the real traces are read is checked by `make bench` (row budget), not here.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from pydantic import ValidationError

from simsched.config.trace_specs import TenantTrace
from simsched.errors import InputError
from simsched.workload.formats import read_length_pairs, read_trace
from simsched.workload.traces import tenant_trace_table

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "data" / "traces"

CSV = """request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens
r2,a,250.5,20,2
r1,a,100,10,1
r3,b,1100,30,3
"""
AZURE = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51,10,7
2023-11-16 18:16:46.6805901,5,6"""  # as the real file: no trailing newline
MOONCAKE = """{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1]}
{"timestamp": 0, "input_length": 7322, "output_length": 490, "hash_ids": [0, 14]}

{"timestamp": 3000, "input_length": 700, "output_length": 4, "hash_ids": [2]}
"""
BURSTGPT = """Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,GPT-4,1087,0,1087,API log
118.5,ChatGPT,417,276,693,Conversation log
120,ChatGPT,100,7,107,API log
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(*args, **kwargs) -> str:
    with pytest.raises(InputError) as caught:
        read_trace(*args, **kwargs)
    return str(caught.value)


# --- the four formats ----------------------------------------------------------------------


def test_csv_reads_sorted_and_relative_to_first_row(tmp_path):
    columns = read_trace(write(tmp_path, "t.csv", CSV), "csv")
    assert columns.arrival_ms.tolist() == [0.0, 150.5, 1000.0]
    assert columns.prefill_tokens.tolist() == [10, 20, 30]
    assert columns.decode_tokens.tolist() == [1, 2, 3]
    assert columns.arrival_ms.dtype == np.float64
    assert columns.prefill_tokens.dtype == columns.decode_tokens.dtype == np.int64


def test_azure_wall_clock_to_exact_milliseconds(tmp_path):
    columns = read_trace(write(tmp_path, "az.csv", AZURE), "azure2023")
    # 100 ns ticks survive: the last row is one tick after a minute
    assert columns.arrival_ms.tolist() == [0.0, 4314.579, 4319.41, 60000.0001]
    assert columns.prefill_tokens.tolist() == [374, 396, 10, 5]
    assert columns.decode_tokens.tolist() == [44, 109, 7, 6]


def test_mooncake_ignores_hash_ids_and_blank_lines(tmp_path):
    columns = read_trace(write(tmp_path, "m.jsonl", MOONCAKE), "mooncake")
    assert columns.arrival_ms.tolist() == [0.0, 0.0, 3000.0]
    assert columns.prefill_tokens.tolist() == [6758, 7322, 700]
    assert columns.decode_tokens.tolist() == [500, 490, 4]


def test_burstgpt_seconds_and_filters(tmp_path):
    path = write(tmp_path, "b.csv", BURSTGPT)
    assert read_trace(path, "burstgpt").arrival_ms.tolist() == [0.0, 40000.0, 113500.0, 115000.0]
    chat = read_trace(path, "burstgpt", model="ChatGPT")
    assert chat.prefill_tokens.tolist() == [472, 417, 100]
    both = read_trace(path, "burstgpt", model="ChatGPT", log_type="Conversation log")
    assert both.arrival_ms.tolist() == [0.0, 113500.0]
    assert both.decode_tokens.tolist() == [18, 276]
    message = error_of(path, "burstgpt", model="GPT-5")
    assert "Model" in message and "'GPT-4'" in message and "'ChatGPT'" in message


def test_filters_only_for_burstgpt(tmp_path):
    message = error_of(write(tmp_path, "t.csv", CSV), "csv", model="ChatGPT")
    assert "model applies only to the burstgpt format" in message


# --- windows and time scale ----------------------------------------------------------------

WINDOWED = "arrival_ms,prefill_tokens,decode_tokens\n" + "".join(
    f"{1000 + 500 * i},{i},{i}\n" for i in range(10)
)  # rows at 0, 0.5, ..., 4.5 s after the first


@pytest.mark.parametrize(
    ("options", "times", "first_token"),
    [
        ({"start_s": 1.0, "duration_s": 1.5}, [0.0, 500.0, 1000.0], 2),  # [1, 2.5) s
        ({"start_s": 4.5}, [0.0], 9),
        ({"start_s": 1.0, "max_requests": 2}, [0.0, 500.0], 2),
        ({"start_s": 1.0, "duration_s": 1.5, "time_scale": 0.5}, [0.0, 250.0, 500.0], 2),
        ({"time_scale": 2.0, "max_requests": 3}, [0.0, 1000.0, 2000.0], 0),
    ],
)
def test_window_then_first_n_then_relative_then_scaled(tmp_path, options, times, first_token):
    columns = read_trace(write(tmp_path, "w.csv", WINDOWED), "csv", **options)
    assert columns.arrival_ms.tolist() == times
    assert columns.prefill_tokens[0] == first_token


def test_window_errors(tmp_path):
    path = write(tmp_path, "w.csv", WINDOWED)
    assert "start_s 5000 is past the end of the trace (4.5 s)" in error_of(
        path, "csv", start_s=5000
    )
    sparse = write(tmp_path, "s.csv", "arrival_ms,prefill_tokens,decode_tokens\n0,1,1\n9000,1,1\n")
    message = error_of(sparse, "csv", start_s=2, duration_s=3)
    assert "[2 s, 5 s) selects no requests" in message


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"time_scale": 0}, "time_scale must be greater than 0"),
        ({"time_scale": -1.0}, "time_scale must be greater than 0"),
        ({"time_scale": float("inf")}, "time_scale must be greater than 0"),
        ({"start_s": -1}, "start_s must be >= 0"),
        ({"duration_s": 0}, "duration_s must be > 0"),
        ({"max_requests": 0}, "max_requests must be at least 1"),
    ],
)
def test_bad_options(tmp_path, options, expected):
    assert expected in error_of(write(tmp_path, "w.csv", WINDOWED), "csv", **options)


# --- bad files -----------------------------------------------------------------------------


def test_unknown_format_and_missing_file(tmp_path):
    assert "unknown trace format 'parquet'" in error_of(write(tmp_path, "t.csv", CSV), "parquet")
    missing = tmp_path / "nope.csv"
    assert error_of(missing, "csv") == f"{missing}: no such trace file"


@pytest.mark.parametrize(
    ("fmt", "text", "expected"),
    [
        ("csv", "arrival_ms,prefill\n1,2\n", "header: missing column(s): prefill_tokens, decode"),
        ("azure2023", "TIMESTAMP,Context\nx,1\n", "missing column(s): ContextTokens, Generated"),
        ("burstgpt", "Timestamp,Model\n1,x\n", "missing column(s): Request tokens, Response"),
        ("csv", "arrival_ms,prefill_tokens,decode_tokens\n1,2,3\n\n4,x,6\n", "line 4: prefill"),
        ("csv", "arrival_ms,prefill_tokens,decode_tokens\n1,2,3\n4,5,-6\n", "line 3: decode"),
        ("csv", "arrival_ms,prefill_tokens,decode_tokens\n1,2.5,3\n", "'2.5' is not a whole"),
        ("csv", "arrival_ms,prefill_tokens,decode_tokens\n1,2,3\n,5,6\n", "arrival_ms is empty"),
        ("azure2023", "TIMESTAMP,ContextTokens,GeneratedTokens\nnoon,1,2\n", "line 2: TIMESTAMP"),
        ("mooncake", '{"timestamp": 1, "input_length": 2}\n', "line 1: missing key(s): output"),
        ("mooncake", '\n{"timestamp": 1, "input_length": 2, "output_length": 3\n', "line 2: not"),
        ("mooncake", '{"timestamp": 1, "input_length": 2, "output_length": 3}\n[1]\n', "line 2"),
        ("mooncake", '{"timestamp": "x", "input_length": 2, "output_length": 3}\n', "'x' is not"),
        ("mooncake", '{"timestamp": 1, "input_length": -2, "output_length": 3}\n', "is negative"),
    ],
)
def test_bad_files_name_file_and_line_or_column(tmp_path, fmt, text, expected):
    path = write(tmp_path, "bad.txt", text)
    message = error_of(path, fmt)
    assert message.startswith(str(path))
    assert expected in message


def test_negative_tokens_message(tmp_path):
    path = write(tmp_path, "n.csv", "arrival_ms,prefill_tokens,decode_tokens\n1,2,3\n4,5,-6\n")
    assert error_of(path, "csv") == f"{path} line 3: decode_tokens '-6' is negative"


def test_header_only_holds_no_requests(tmp_path):
    path = write(tmp_path, "h.csv", "arrival_ms,prefill_tokens,decode_tokens\n")
    assert error_of(path, "csv") == f"{path}: holds no requests"


# --- length pairs --------------------------------------------------------------------------


def test_length_pairs_are_cached_and_read_only(tmp_path):
    path = write(tmp_path, "t.csv", CSV)
    prefill, decode = read_length_pairs(str(path), "csv")
    assert prefill.tolist() == [10, 20, 30] and decode.tolist() == [1, 2, 3]
    again = read_length_pairs(str(tmp_path / "." / "t.csv"), "csv")  # same file, other spelling
    assert again[0] is prefill
    with pytest.raises(ValueError):
        prefill[0] = 1
    with pytest.raises(InputError, match="unknown trace format"):
        read_length_pairs(str(path), "tsv")


def test_length_pairs_reread_an_edited_file(tmp_path):
    path = write(tmp_path, "t.csv", CSV)
    assert read_length_pairs(path, "csv")[0].tolist() == [10, 20, 30]
    write(tmp_path, "t.csv", CSV.replace("r3,b,1100,30,3", "r3,b,1100,3000,3"))
    assert read_length_pairs(path, "csv")[0].tolist() == [10, 20, 3000]


# --- the scenario model --------------------------------------------------------------------


def test_tenant_trace_model_defaults_and_checks():
    trace = TenantTrace(path="t.csv")
    assert (trace.format, trace.time_scale, trace.start_s, trace.max_requests) == (
        "csv",
        1.0,
        None,
        None,
    )
    for bad in (
        {"path": "t.csv", "time_scale": 0},
        {"path": "t.csv", "max_requests": 0},
        {"path": "t.csv", "start_s": -1},
        {"path": "t.csv", "format": "parquet"},
        {"path": "t.csv", "speed": 2},
        {"path": "t.csv", "model": "GPT-4"},
        {"path": ""},
    ):
        with pytest.raises(ValidationError):
            TenantTrace(**bad)
    TenantTrace(path="b.csv", format="burstgpt", model="GPT-4", log_type="API log")


def test_tenant_trace_table_gives_rows_to_the_tenant(tmp_path):
    trace = TenantTrace(path=str(write(tmp_path, "t.csv", CSV)), time_scale=2.0, max_requests=2)
    tenant = SimpleNamespace(id="acme", priority="batch")
    table = tenant_trace_table(trace, tenant, 3)
    assert table.request_id.tolist() == ["acme-000000", "acme-000001"]
    assert table.tenant.tolist() == [3, 3]
    assert table.lane.tolist() == [1, 1]
    assert table.arrival_ms.tolist() == [0.0, 301.0]
    assert table.prefill_tokens.tolist() == [10, 20]


# --- the real traces (shared folder; skipped when absent) ----------------------------------

REAL = [
    ("azure_llm_2023_conv.csv", "azure2023", 19_366, 3_501.7),
    ("azure_llm_2023_code.csv", "azure2023", 8_819, 3_435.9),
    ("mooncake_fast25_conversation.jsonl", "mooncake", 12_031, 3_536.999),
]


@pytest.mark.parametrize(("name", "fmt", "rows", "span_s"), REAL)
def test_real_trace(name, fmt, rows, span_s):
    path = TRACES / name
    if not path.is_file():
        pytest.skip(f"{name} not present")
    columns = read_trace(path, fmt)
    assert len(columns) == rows
    assert columns.arrival_ms[0] == 0.0
    assert columns.arrival_ms[-1] / 1000 == pytest.approx(span_s, abs=0.05)
    assert (np.diff(columns.arrival_ms) >= 0).all()


def test_real_mooncake_span_is_exact_and_window_matches():
    path = TRACES / "mooncake_fast25_conversation.jsonl"
    if not path.is_file():
        pytest.skip("mooncake trace not present")
    assert read_trace(path, "mooncake").arrival_ms[-1] == 3_536_999.0
    window = read_trace(path, "mooncake", start_s=600, duration_s=60, time_scale=0.5)
    assert 0 < len(window) < 12_031 and window.arrival_ms[-1] < 30_000
    assert "start_s 5000 is past the end of the trace (3537.0 s)" in error_of(
        path, "mooncake", start_s=5000
    )
