"""Issue 21 items 2 and 5: hostile hf_config, calibration, vLLM and trace files, and studies too
large for the machine, each refused before anything runs.

Every case goes through the console script's `main`: exit 2, one stderr line naming the file and
the field, no traceback, and no file in the folder touched (bytes and mtime compared). Each
reproduction of the issue is a row here; a few properties (hypothesis) cover the space around
them: any value that is not a positive whole number in an hf_config shape field, and any quoted
or boolean number in a calibration file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simsched.config.loading import load_scenario
from simsched.errors import InputError
from tests.cli.conftest import TINY_SHAPE

SHAPE = TINY_SHAPE
SCENARIO = """name: tiny
seed: 1
cluster:
  service_model: continuous_batching
  model: {hf_config: m/config.json}
tenants:
  - id: a
    arrivals: {kind: periodic, interval_ms: 10, count: 3}
    prefill_tokens: 10
    decode_tokens: 5
"""
CALIBRATION = """settings:
  - {path: cluster.latency_model.overhead_ms, low: 0.0, high: 5.0}
cases:
  - {name: c, scenario: s.yaml, metric: p50_ttft_ms, measured: 40}
"""
BURSTGPT_HEADER = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
SLO = ("--slo", "all.p99_ttft_ms<=1000")
# the folder fixture is shared by a property's examples: each example rewrites the file it reads
FIXTURE_REUSED = [HealthCheck.function_scoped_fixture]


pytestmark = pytest.mark.usefixtures("no_simulation")  # the folder fixtures: conftest.py


def _config(folder: Path, changes: dict, raw: str | None = None) -> None:
    text = raw if raw is not None else json.dumps({**SHAPE, **changes})
    (folder / "m" / "config.json").write_text(text, encoding="utf-8")


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def refused(simsched_cli, folder: Path, *args: str) -> str:
    """Run the command; it must exit 2 with one line, touching no file; the line."""
    before = _files(folder)
    code, _, err = simsched_cli(*args)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert _files(folder) == before
    return err


# hf_config: (the fields changed, or raw text; words the message must hold)
HF_CASES = [
    ({"num_attention_heads": 0}, ["num_attention_heads", "not 0"]),  # was ZeroDivisionError
    ({"hidden_size": float("inf")}, ["hidden_size", "Infinity"]),  # was OverflowError
    ({"num_key_value_heads": float("inf")}, ["num_key_value_heads", "Infinity"]),
    ({"head_dim": float("inf")}, ["head_dim", "Infinity"]),
    ({"num_key_value_heads": 0}, ["num_key_value_heads", "not 0"]),  # was a silent default
    ({"head_dim": 0}, ["head_dim", "not 0"]),  # was a silent default
    ({"num_hidden_layers": 32.7}, ["num_hidden_layers", "32.7"]),  # was cut to 32
    ({"num_hidden_layers": True}, ["num_hidden_layers", "true"]),  # was 1
    ({"num_key_value_heads": 3}, ["num_key_value_heads", "multiple"]),
    ({"hidden_size": 500}, ["hidden_size", "multiple of num_attention_heads"]),
    ({"vocab_size": 2**31}, ["vocab_size"]),
    ({"tie_word_embeddings": "yes"}, ["tie_word_embeddings"]),
    ({"torch_dtype": True}, ["torch_dtype", "not true"]),  # was taken as bf16 in silence
    ({"torch_dtype": 16}, ["torch_dtype", "not 16"]),
    ({"text_config": {"torch_dtype": [1]}}, ["text_config.torch_dtype", "not list"]),
    # each field within its bound, the product not: 1000 layers of a 1,048,576-wide model hold
    # at least 1000 x 12 x 1,048,576^2 ~ 1.3e16 parameters, over 1e15 (was blamed on
    # cluster.model.params, a setting the user never wrote)
    (
        {"num_hidden_layers": 1000, "hidden_size": 1048576, "intermediate_size": 4194304},
        ["num_hidden_layers", "hidden_size", "parameters, more than 1e+15"],
    ),
]


@pytest.mark.parametrize(("changes", "words"), HF_CASES)
def test_a_bad_hf_config_field_is_named(folder, changes, words, simsched_cli) -> None:
    _config(folder, changes)
    err = refused(simsched_cli, folder, "validate", "s.yaml")
    assert err.startswith("s.yaml: cluster.model: ") and "m/config.json" in err, err
    for word in words:
        assert word in err, err


@pytest.mark.parametrize(
    ("path", "raw", "words"),
    [
        ("/dev/zero", None, ["not a regular file"]),  # grew without bound
        ("m/config.json", "[" * 100_000 + "]" * 100_000, ["nested too deeply"]),
        ("m/config.json", json.dumps({**SHAPE, "pad": "x" * 2**20}), ["too large"]),
    ],
)
def test_an_hf_config_that_is_no_config_is_refused(folder, path, raw, words, simsched_cli) -> None:
    if raw is not None:
        _config(folder, {}, raw)
    (folder / "s.yaml").write_text(SCENARIO.replace("m/config.json", path), encoding="utf-8")
    err = refused(simsched_cli, folder, "validate", "s.yaml")
    assert "cluster.model" in err and all(word in err for word in words), err


NOT_A_SHAPE = st.one_of(
    st.integers(max_value=0),
    st.integers(min_value=2**30 + 1),
    st.floats(allow_nan=False),  # 32.0 too: a shape is counted, not measured
    st.booleans(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(field=st.sampled_from(sorted(SHAPE)), value=NOT_A_SHAPE)
def test_any_non_whole_shape_value_is_an_input_error(folder, field, value) -> None:
    _config(folder, {field: value})
    with pytest.raises(InputError) as info:
        load_scenario(folder / "s.yaml")
    assert "cluster.model" in str(info.value) and field in str(info.value)


def test_a_valid_hf_config_still_loads_with_its_arithmetic(folder) -> None:
    # 2 layers x (attention 512*8*64*2 + 512*2*64*2, MLP 3*512*1024, norms 2*512) + embeddings
    # and head 2*1000*512 + the final norm 512, by the dense-decoder formula
    per_layer = 512 * 8 * 64 * 2 + 512 * 2 * 64 * 2 + 3 * 512 * 1024 + 2 * 512
    model = load_scenario(folder / "s.yaml").cluster.model
    assert model.params == 2 * per_layer + 2 * 1000 * 512 + 512
    assert (model.kv_heads, model.head_dim) == (2, 512 // 8)


# calibration files: (text replaced, its replacement, words)
CALIBRATION_CASES = [
    ("low: 0.0", "low: true", ["settings[0].low", "boolean"]),
    ("low: 0.0", 'low: "0.5"', ["settings[0].low", "text"]),
    ("measured: 40", "measured: true", ["cases[0].measured", "boolean"]),
    ("measured: 40", 'measured: "40"', ["cases[0].measured", "text"]),
    ("scenario: s.yaml", f"scenario: {'z' * 300}.yaml", ["cases[0].scenario"]),  # OSError
]


@pytest.mark.parametrize(("old", "new", "words"), CALIBRATION_CASES)
def test_a_bad_calibration_field_is_named(folder, old, new, words, simsched_cli) -> None:
    (folder / "cal.yaml").write_text(CALIBRATION.replace(old, new), encoding="utf-8")
    err = refused(simsched_cli, folder, "calibrate", "cal.yaml")
    assert err.startswith("cal.yaml: "), err
    assert all(word in err for word in words), err


def test_a_calibration_alias_bomb_is_refused(folder, simsched_cli) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    (folder / "cal.yaml").write_text("\n".join(lines) + "\n" + CALIBRATION, encoding="utf-8")
    err = refused(simsched_cli, folder, "calibrate", "cal.yaml")
    assert err.startswith("cal.yaml: line") and "alias" in err, err


def test_a_calibration_file_too_large_is_refused_unread(folder, simsched_cli) -> None:
    with open(folder / "cal.yaml", "ab") as handle:  # sparse: nothing is written to disk
        handle.truncate(17 * 1024**2)
    err = refused(simsched_cli, folder, "calibrate", "cal.yaml")
    assert "cal.yaml" in err and "too large" in err, err


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"median_ttft_ms": Infinity}', ["inf", "not a finite"]),  # was "residuals not finite"
        ('{"median_ttft_ms": 1e400}', ["inf", "not a finite"]),
        ('{"median_ttft_ms": 1' + "0" * 400 + "}", ["digits", "not a finite"]),
        ("[" * 100_000 + "]" * 100_000, ["not a vLLM result"]),
    ],
)
def test_a_vllm_result_that_is_not_finite_is_refused(folder, body, words, simsched_cli):
    (folder / "v.json").write_text(body, encoding="utf-8")
    text = CALIBRATION.replace("measured: 40", "vllm_result: v.json")
    (folder / "cal.yaml").write_text(text, encoding="utf-8")
    err = refused(simsched_cli, folder, "calibrate", "cal.yaml")
    assert err.startswith("cal.yaml: cases[0].vllm_result: v.json"), err
    assert all(word in err for word in words), err


QUOTED_OR_BOOLEAN = st.one_of(
    st.booleans().map(lambda b: "true" if b else "false"),
    st.floats(0.1, 100.0).map(lambda v: f'"{v}"'),
    st.integers(1, 100).map(lambda v: f"'{v}'"),
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(field=st.sampled_from(["low", "high", "start", "measured"]), value=QUOTED_OR_BOOLEAN)
def test_calibration_numbers_are_strict(folder, field, value) -> None:
    from simsched.studies.calibration.spec import load_calibration

    text = {
        "low": CALIBRATION.replace("low: 0.0", f"low: {value}"),
        "high": CALIBRATION.replace("high: 5.0", f"high: {value}"),
        "start": CALIBRATION.replace("high: 5.0", f"high: 5.0, start: {value}"),
        "measured": CALIBRATION.replace("measured: 40", f"measured: {value}"),
    }[field]
    (folder / "cal.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_calibration(folder / "cal.yaml")
    assert str(info.value).startswith(f"{folder / 'cal.yaml'}: ") and field in str(info.value)


@pytest.mark.parametrize(
    ("format", "name", "body", "column"),
    [
        ("burstgpt", "b.csv", BURSTGPT_HEADER + "0,ChatGPT,10,5,15,Conversation log\n"
         "1e306,ChatGPT,10,5,15,Conversation log\n", "Timestamp '1e306'"),  # was exit 0
        ("burstgpt", "b.csv", BURSTGPT_HEADER + "1e308,ChatGPT,10,5,15,Conversation log\n"
         "1e308,ChatGPT,10,5,15,Conversation log\n", "Timestamp '1e308'"),  # was exit 0
        ("mooncake", "m.jsonl", '{"timestamp": 1e16, "input_length": 5, "output_length": 5}\n',
         "timestamp '1e+16'"),
        ("csv", "t.csv", "arrival_ms,prefill_tokens,decode_tokens\n2e15,5,5\n",
         "arrival_ms '2e15'"),
    ],
)  # fmt: skip
def test_trace_times_beyond_the_clock_are_refused(
    folder, format, name, body, column, simsched_cli
) -> None:
    (folder / name).write_text(body, encoding="utf-8")
    trace = f"    trace: {{path: {name}, format: {format}}}\n"
    text = SCENARIO.split("    arrivals:")[0] + trace
    (folder / "s.yaml").write_text(text, encoding="utf-8")
    err = refused(simsched_cli, folder, "validate", "s.yaml")
    assert err.startswith(f"{name} line") and column in err and "1e+15 ms" in err, err


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seconds=st.floats(min_value=1.0000001e12, max_value=1.7e308))
def test_any_burstgpt_time_beyond_the_clock_is_refused(folder, seconds) -> None:
    from simsched.workload.formats import read_trace

    row = f"{seconds!r},ChatGPT,10,5,15,Conversation log\n"
    (folder / "b.csv").write_text(BURSTGPT_HEADER + "0,ChatGPT,1,1,2,x\n" + row, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_trace(folder / "b.csv", "burstgpt")
    assert "line 3" in str(info.value) and "Timestamp" in str(info.value)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--vary", "cluster.replicas", "--range=-1.7e308:1.7e308"), ["--step", "countless"]),
        (("--vary", "cluster.gpu_memory_utilization", "--range=-1.7e308:1.7e308"),
         ["--range", "wider than a float"]),
        (("--vary", "cluster.gpu_memory_utilization", "--range", "0.5:0.9", "--step", "5e-324"),
         ["--step", "countless"]),
        (("--vary", "cluster.replicas", "--range", "1:4", "--step", "5e-324"),
         ["--step", "integer"]),
        (("--vary", "cluster.replicas", "--range", "1:2", "--report", "r" * 300),
         ["--report", "255 bytes"]),
    ],
)  # fmt: skip
def test_plan_flags_beyond_a_float_are_input_errors(folder, args, words, simsched_cli):
    err = refused(simsched_cli, folder, "plan", "s.yaml", *args, *SLO)
    assert all(word in err for word in words), err


def _values(count: int, start: int = 1) -> str:
    return ",".join(str(start + i) for i in range(count))


PLAN = ("plan", "s.yaml", "--vary", "cluster.replicas", "--range", "1:4", *SLO)
SWEEP_OUT = ("--out", "x.csv")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((*PLAN, "--seeds", "1000000"), ["--seeds", "1,000,000", "limits.max_seeds"]),
        (("sweep", "s.yaml", "--grid", "seed=1,2", "--seeds", "1000000", *SWEEP_OUT),
         ["--seeds", "1,000,000", "limits.max_seeds"]),
        ((*PLAN, "--over", f"seed={_values(1000)}"), ["--over", "1,000", "max_combinations"]),
        ((*PLAN, "--over", f"seed={_values(100)}", "--over",
          f"cluster.max_num_seqs={_values(100)}"), ["--over", "10,000", "max_combinations"]),
        ((*PLAN, "--over", f"seed={_values(1000)}", "--over",  # the whole count, not one flag's
          f"cluster.max_num_seqs={_values(1000)}"),
         ["--over", "1,000,000", "max_combinations", "max_combinations=1000000"]),
        (("sweep", "s.yaml", "--grid", f"seed={_values(1000)}", "--grid",
          f"cluster.max_num_seqs={_values(1000)}", *SWEEP_OUT),
         ["--grid", "1,000,000", "limits.max_grid_points"]),
        (("sweep", "s.yaml", "--grid", f"cluster.max_num_seqs={_values(100)}", "--seeds", "101",
          *SWEEP_OUT), ["100 grid points x 101 seeds = 10,100 runs", "max_study_runs"]),
        (("plan", "s.yaml", "--vary", "cluster.replicas", "--range", "1:100000", *SLO,
          "--seeds", "900", "--over", f"cluster.max_num_seqs={_values(200)}"),
         ["200 combinations x 19 probes x 900 seeds = 3,420,000 runs", "max_study_runs"]),
    ],
)  # fmt: skip
def test_a_study_too_large_is_refused_at_once(folder, args, words, simsched_cli) -> None:
    err = refused(simsched_cli, folder, *args)
    assert err.startswith("s.yaml: "), err
    assert all(word in err for word in words) and "--set limits." in err, err


def test_a_raised_limit_lets_the_study_through_to_the_next_check(folder, simsched_cli):
    # 2,000 seeds pass once max_seeds is raised; 10 combinations x (2 + log2 of 100,000 = 19
    # probes) x 2,000 seeds are 380,000 runs, beyond max_study_runs (10,000)
    args = ("plan", "s.yaml", "--vary", "cluster.replicas", "--range", "1:100000", *SLO,
            "--seeds", "2000", "--set", "limits.max_seeds=2000",
            "--over", f"cluster.max_num_seqs={_values(10)}")  # fmt: skip
    err = refused(simsched_cli, folder, *args)
    assert "max_study_runs" in err and "= 380,000" in err, err


def test_a_limit_is_inclusive() -> None:
    from simsched.studies.limits import check_count

    check_count(10, 10, "max_seeds", "seeds", "x.yaml", "--seeds")  # at the limit: allowed
    with pytest.raises(InputError, match=r"^x.yaml: --seeds: 11 seeds, more than limits.max_seeds"):
        check_count(11, 10, "max_seeds", "seeds", "x.yaml", "--seeds")


def test_a_probe_estimate_is_a_bisections(folder) -> None:
    from simsched.studies.limits import probes_per_search

    # HI, LO, then halving: 1 value is one probe; 2 are two; 1024 take 2 + 10
    assert [probes_per_search(n) for n in (1, 2, 3, 1024, 1025)] == [1, 2, 3, 12, 13]


def test_validate_bounds_a_huge_literal_list_before_parsing(folder, simsched_cli) -> None:
    # 300,000 values under an unknown key: refused from the text, before PyYAML sees it
    text = SCENARIO + "junk: [" + ",".join(["1"] * 300_000) + "]\n"
    (folder / "s.yaml").write_text(text, encoding="utf-8")
    for command in ("validate", "scenario"):
        err = refused(simsched_cli, folder, command, "s.yaml")
        assert err.startswith("s.yaml: ") and "250,000" in err, err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_hf_config_is_refused_unread(folder, simsched_cli) -> None:
    os.mkfifo(folder / "m" / "fifo.json")
    (folder / "s.yaml").write_text(SCENARIO.replace("config.json", "fifo.json"), encoding="utf-8")
    err = refused(simsched_cli, folder, "validate", "s.yaml")
    assert "fifo.json" in err and "not a regular file" in err, err
