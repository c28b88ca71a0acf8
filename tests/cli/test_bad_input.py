"""Bad input through the real entry point: exit 2, one stderr line naming file and field.

Every case runs `simsched.cli.app.main` (the console script's function, which turns an `InputError`
into that line) from inside a temporary folder holding `x.yaml` and, for trace cases,
`requests.csv`. The scenario files are the repository's noisy-neighbor study, mutated.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((REPO / "scenarios" / "noisy_neighbor.yaml").read_text(encoding="utf-8"))
HEADER = "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens\n"
GOOD_ROWS = "r1,tenant_chat_pro,0,100,10\nr2,tenant_chat_pro,5,100,10\n"

Mutation = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Case:
    """One bad input: how to make it, and the start and pieces of the one line it must give."""

    starts: str  # the line starts with this: the file and the field or row
    contains: tuple[str, ...] = ()
    mutate: Mutation | None = None
    text: str | bytes | None = None  # x.yaml verbatim, instead of a mutated study
    trace: str | bytes | None = None  # requests.csv; the scenario then replays it
    args: tuple[str, ...] = ()
    commands: tuple[str, ...] = ("scenario", "validate")
    setup: Callable[[Path], None] | None = None  # makes x.yaml itself


def _parent(raw: dict[str, Any], path: str) -> tuple[Any, str | int]:
    """The container holding `a.b.0.c` and the last key (the tests' own walk, not simsched's)."""
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node: Any = raw
    for part in parents:
        node = node[part]
    return node, last


def put(path: str, value: Any) -> Mutation:
    def mutate(raw: dict[str, Any]) -> None:
        node, last = _parent(raw, path)
        node[last] = value

    return mutate


def drop(path: str) -> Mutation:
    def mutate(raw: dict[str, Any]) -> None:
        node, last = _parent(raw, path)
        del node[last]

    return mutate


def no_file(folder: Path) -> None:
    """Write nothing: the scenario file does not exist."""


def trace_case(rows: str, starts: str, *contains: str, header: str = HEADER) -> Case:
    return Case(starts=starts, contains=contains, trace=header + rows)


def use_trace(raw: dict[str, Any]) -> None:
    """The first tenant's requests come from requests.csv instead of being generated."""
    for key in ("arrivals", "prefill_tokens", "decode_tokens"):
        del raw["tenants"][0][key]
    raw["trace"] = {"path": "requests.csv"}


CASES = {
    # files
    "missing file": Case("x.yaml: no such scenario file", setup=no_file),
    "empty file": Case("x.yaml: is empty", text=""),
    "only whitespace": Case("x.yaml: is empty", text="  \n\n\t\n"),
    "binary file": Case("x.yaml: is a binary file", text=b"PK\x03\x04\x00\x00\x08\x00"),
    "not UTF-8": Case("x.yaml: is not UTF-8 text", text=b"name: caf\xe9\n"),
    "unparsable YAML": Case("x.yaml: line 2: invalid YAML:", text="tenants: [a, b\n"),
    "bad YAML mapping": Case("x.yaml: line 1: invalid YAML:", text="name: a: b\n"),
    "duplicate key": Case(
        "x.yaml: line 4: invalid YAML: duplicate key 'weight'",
        text="tenants:\n  - id: a\n    weight: 1\n    weight: 2\n",
    ),
    "top level is a list": Case("x.yaml: the top level must be a mapping, not list", text="- a\n"),
    "top level is text": Case("x.yaml: the top level must be a mapping, not str", text="hello\n"),
    "a directory": Case("x.yaml: is a directory", setup=lambda d: (d / "x.yaml").mkdir()),
    # unknown keys
    "unknown top key": Case("x.yaml: tenantz: unknown key", mutate=put("tenantz", 1)),
    "unknown tenant key": Case(
        "x.yaml: tenants[0].wieght: unknown key", mutate=put("tenants.0.wieght", 1)
    ),
    "unknown quota key": Case(
        "x.yaml: tenants[2].quota.burst: unknown key", mutate=put("tenants.2.quota.burst", 1)
    ),
    "unknown cluster key": Case(
        "x.yaml: cluster.kv_blocks: unknown key", mutate=put("cluster.kv_blocks", 1)
    ),
    # wrong types
    "weight is text": Case(
        "x.yaml: tenants[1].weight: ", ("valid number",), mutate=put("tenants.1.weight", "heavy")
    ),
    "kv blocks is text": Case(
        "x.yaml: cluster.total_kv_blocks: ", ("valid integer",), put("cluster.total_kv_blocks", "x")
    ),
    "kv blocks is fractional": Case(
        "x.yaml: cluster.total_kv_blocks: ", ("fractional",), put("cluster.total_kv_blocks", 1.5)
    ),
    "enabled is not a boolean": Case(
        "x.yaml: admission.enabled: ", ("valid boolean",), put("admission.enabled", "maybe")
    ),
    "tenants is text": Case("x.yaml: tenants: ", ("valid list",), put("tenants", "all")),
    "cluster is a number": Case("x.yaml: cluster: ", ("dictionary",), put("cluster", 5)),
    "a tenant is a number": Case("x.yaml: tenants[0]: ", ("dictionary",), put("tenants.0", 5)),
    # non-positive numbers
    "zero weight": Case(
        "x.yaml: tenants[1].weight: Input should be greater than 0",
        mutate=put("tenants.1.weight", 0),
    ),
    "negative weight": Case(
        "x.yaml: tenants[1].weight: Input should be greater than 0",
        mutate=put("tenants.1.weight", -1),
    ),
    "NaN weight": Case(
        "x.yaml: tenants[1].weight: ", ("finite",), mutate=put("tenants.1.weight", float("nan"))
    ),
    "zero quota burst": Case(
        "x.yaml: tenants[0].quota.burst_service_tokens: Input should be greater than 0",
        mutate=put("tenants.0.quota.burst_service_tokens", 0),
    ),
    "negative quota rate": Case(
        "x.yaml: tenants[0].quota.sustained_service_tokens_per_sec: Input should be greater than 0",
        mutate=put("tenants.0.quota.sustained_service_tokens_per_sec", -5),
    ),
    "zero KV blocks": Case(
        "x.yaml: cluster.total_kv_blocks: Input should be greater than 0",
        mutate=put("cluster.total_kv_blocks", 0),
    ),
    "zero throughput": Case(
        "x.yaml: cluster.service_tokens_per_ms: Input should be greater than 0",
        mutate=put("cluster.service_tokens_per_ms", 0),
    ),
    "zero decode weight": Case(
        "x.yaml: scheduler.decode_weight: Input should be greater than 0",
        mutate=put("scheduler.decode_weight", 0),
    ),
    "zero count": Case(
        "x.yaml: tenants[0].arrivals.count: Input should be greater than",
        mutate=put("tenants.0.arrivals.count", 0),
    ),
    "negative count": Case(
        "x.yaml: tenants[0].arrivals.count: Input should be greater than",
        mutate=put("tenants.0.arrivals.count", -3),
    ),
    "negative seed": Case("x.yaml: seed: ", ("greater than or equal to 0",), put("seed", -1)),
    # watermarks
    "zero watermark": Case(
        "x.yaml: admission.interactive_kv_watermark: Input should be greater than 0",
        mutate=put("admission.interactive_kv_watermark", 0),
    ),
    "watermark above 1": Case(
        "x.yaml: admission.batch_kv_watermark: Input should be less than or equal to 1",
        mutate=put("admission.batch_kv_watermark", 1.5),
    ),
    "batch above interactive": Case(
        "x.yaml: admission: batch_kv_watermark must not exceed interactive_kv_watermark",
        mutate=put("admission.batch_kv_watermark", 0.95),
    ),
    # unknown policy or enum values
    "unknown policy": Case(
        "x.yaml: scheduler: unknown policy 'lottery' (known: ",
        ("service_token_drr",),
        mutate=put("scheduler.policy", "lottery"),
    ),
    "unknown priority": Case(
        "x.yaml: tenants[0].priority: ", ("'interactive'",), put("tenants.0.priority", "urgent")
    ),
    "misspelt priority": Case(
        "x.yaml: tenants[0].priority: ",
        ("'interactive'", "; did you mean 'interactive'?"),
        put("tenants.0.priority", "interactve"),
    ),
    "unknown evaluate_at": Case(
        "x.yaml: admission.evaluate_at: ", ("'arrival'",), put("admission.evaluate_at", "never")
    ),
    "unknown service model": Case(
        "x.yaml: cluster", ("service_model", "token_server"), put("cluster.service_model", "gpu")
    ),
    "unknown arrival kind": Case(
        "x.yaml: tenants[0].arrivals", ("periodic",), put("tenants.0.arrivals.kind", "lottery")
    ),
    # duplicates and missing parts
    "duplicate tenant id": Case(
        "x.yaml: tenants: duplicate tenant id 'tenant_chat_pro'",
        mutate=put("tenants.1.id", "tenant_chat_pro"),
    ),
    "duplicate variant name": Case(
        "x.yaml: variants: duplicate variant name 'request_count_no_admission'",
        mutate=put("variants.1.name", "request_count_no_admission"),
    ),
    "empty tenant list": Case("x.yaml: tenants: ", ("at least 1",), mutate=put("tenants", [])),
    "no tenants": Case("x.yaml: tenants: Field required", mutate=drop("tenants")),
    "sizes missing": Case(
        "x.yaml: tenants[0]: decode_tokens is required", mutate=drop("tenants.0.decode_tokens")
    ),
    "variant without a name": Case("x.yaml: variants[0].name: ", mutate=drop("variants.0.name")),
    # variant overrides
    "variant: unknown path": Case(
        "x.yaml: variants[0] (request_count_no_admission): cluster.bogus: unknown key",
        mutate=put("variants.0.set", {"cluster.bogus": 1}),
    ),
    "variant: wrong type": Case(
        "x.yaml: variants[1] (service_token_drr_with_admission): cluster.total_kv_blocks: ",
        ("valid integer",),
        mutate=put("variants.1.set", {"cluster.total_kv_blocks": "lots"}),
    ),
    "variant: out of range": Case(
        "x.yaml: variants[0] (request_count_no_admission): tenants.9.weight: index 9 is out of "
        "range (tenants has 3 elements)",
        mutate=put("variants.0.set", {"tenants.9.weight": 1}),
    ),
    "variant: unknown id": Case(
        "x.yaml: variants[0] (request_count_no_admission): tenants.ghost.weight: ",
        ("no element with id or name 'ghost'",),
        mutate=put("variants.0.set", {"tenants.ghost.weight": 1}),
    ),
    "variant: into a scalar": Case(
        "x.yaml: variants[0] (request_count_no_admission): seed.x: seed is 1, not a mapping",
        mutate=put("variants.0.set", {"seed.x": 1}),
    ),
    "variant: zero weight": Case(
        "x.yaml: variants[1] (service_token_drr_with_admission): tenants[1].weight: "
        "Input should be greater than 0",
        mutate=put("variants.1.set", {"tenants[1].weight": 0}),
    ),
    # --set
    "--set unknown path": Case(
        "x.yaml: --set cluster.bogus=1: cluster.bogus: unknown key",
        args=("--set", "cluster.bogus=1"),
    ),
    "--set wrong type": Case(
        "x.yaml: --set cluster.total_kv_blocks=lots: cluster.total_kv_blocks: ",
        ("valid integer",),
        args=("--set", "cluster.total_kv_blocks=lots"),
    ),
    "--set zero weight by id": Case(
        "x.yaml: --set tenants.tenant_ide_assist.weight=0: tenants[1].weight: "
        "Input should be greater than 0",
        args=("--set", "tenants.tenant_ide_assist.weight=0"),
    ),
    "--set names the guilty flag": Case(
        "x.yaml: --set scheduler.decode_weight=0: scheduler.decode_weight: ",
        args=("--set", "seed=3", "--set", "scheduler.decode_weight=0", "--set", "seed=4"),
    ),
    "--set without =": Case(
        "x.yaml: --set cluster.total_kv_blocks: expected PATH=VALUE",
        args=("--set", "cluster.total_kv_blocks"),
    ),
    "--set out of range": Case(
        "x.yaml: --set tenants[7].weight=2: index 7 is out of range (tenants has 3 elements)",
        args=("--set", "tenants[7].weight=2"),
    ),
    "--set unknown id": Case(
        "x.yaml: --set tenants.ghost.weight=2: tenants has no element with id or name 'ghost'",
        args=("--set", "tenants.ghost.weight=2"),
    ),
    "--set into a scalar": Case(
        "x.yaml: --set seed.x=2: seed is 1, not a mapping or list", args=("--set", "seed.x=2")
    ),
    "--set malformed path": Case(
        "x.yaml: --set tenants..weight=2: malformed path", args=("--set", "tenants..weight=2")
    ),
    "--set breaks a variant": Case(
        "x.yaml: variants[0] (request_count_no_admission): ",
        ("unknown key",),
        args=("--set", "variants[0].set={cluster.nope: 1}"),
    ),
    "--set a variant undoes": Case(  # validate checks what scenario would run: every variant
        "x.yaml: --set scheduler.policy=wfq: variant 'request_count_no_admission' sets "
        "scheduler.policy itself, so --set would not change it there",
        args=("--set", "scheduler.policy=wfq"),
    ),
    # --variant
    "--variant names no variant": Case(
        "x.yaml: --variant: no variant 'ghost' (known: request_count_no_admission, ",
        args=("--variant", "ghost"),
        commands=("scenario",),
    ),
    # traces
    "trace: missing file": Case("requests.csv: no such trace file", mutate=use_trace),
    "trace: empty file": Case("requests.csv: is empty", trace=""),
    "trace: binary file": Case("requests.csv: is a binary file", trace=b"\x00\x01\x02"),
    "trace: header only": trace_case("", "requests.csv: holds no requests"),
    "trace: missing column": trace_case(
        "r1,tenant_chat_pro,0,100\n",
        "requests.csv: header: missing column(s): decode_tokens",
        header="request_id,tenant_id,arrival_ms,prefill_tokens\n",
    ),
    "trace: unknown column": trace_case(
        "r1,tenant_chat_pro,0,100,10,7\n",
        "requests.csv: header: unknown column(s): colour",
        header=HEADER.strip() + ",colour\n",
    ),
    "trace: too many fields": trace_case(
        "r1,tenant_chat_pro,0,100,10,7\n", "requests.csv line 2: 6 fields, but the header names 5"
    ),
    "trace: too many fields later": trace_case(
        GOOD_ROWS + "r3,tenant_chat_pro,0,100,10,7\n", "requests.csv line 4: 6 fields"
    ),
    "trace: unknown tenant": trace_case(
        GOOD_ROWS + "r3,ghost,9,1,1\n", "requests.csv line 4: tenant 'ghost' is not declared"
    ),
    "trace: negative arrival": trace_case(
        "r1,tenant_chat_pro,-1,100,10\n", "requests.csv line 2: arrival_ms '-1' is negative"
    ),
    "trace: negative tokens": trace_case(
        GOOD_ROWS + "r3,tenant_chat_pro,7,100,-10\n", "requests.csv line 4: decode_tokens '-10'"
    ),
    "trace: empty value": trace_case(
        "r1,tenant_chat_pro,,100,10\n", "requests.csv line 2: arrival_ms is empty"
    ),
    "trace: non-numeric value": trace_case(
        "r1,tenant_chat_pro,0,lots,10\n",
        "requests.csv line 2: prefill_tokens 'lots' is not a number",
    ),
    "trace: infinite value": trace_case(
        "r1,tenant_chat_pro,inf,100,10\n", "requests.csv line 2: arrival_ms 'inf' is not a number"
    ),
    "trace: fractional tokens": trace_case(
        "r1,tenant_chat_pro,0,100.5,10\n", "requests.csv line 2: prefill_tokens '100.5'"
    ),
    "trace: absurd token count": trace_case(
        "r1,tenant_chat_pro,0,1e30,10\n", "requests.csv line 2: prefill_tokens ", "is above"
    ),
    "trace: empty request_id": trace_case(
        "r1,tenant_chat_pro,0,100,10\n,tenant_chat_pro,1,100,10\n",
        "requests.csv line 3: request_id is empty",
    ),
    "trace: duplicate request_id": trace_case(
        GOOD_ROWS + "r1,tenant_chat_pro,9,1,1\n", "requests.csv line 4: duplicate request_id 'r1'"
    ),
    "trace: bad priority_class": trace_case(
        "r1,tenant_chat_pro,0,100,10,urgent\n",
        "requests.csv line 2: priority_class 'urgent' is not interactive or batch",
        header=HEADER.strip() + ",priority_class\n",
    ),
}


def write_case(case: Case, folder: Path) -> None:
    if case.setup is not None:
        case.setup(folder)
        return
    if case.text is not None:
        data = case.text if isinstance(case.text, bytes) else case.text.encode("utf-8")
        (folder / "x.yaml").write_bytes(data)
        return
    raw = copy.deepcopy(BASE)
    if case.trace is not None:
        use_trace(raw)
        data = case.trace if isinstance(case.trace, bytes) else case.trace.encode("utf-8")
        (folder / "requests.csv").write_bytes(data)
    if case.mutate is not None:
        case.mutate(raw)
    (folder / "x.yaml").write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")


def assert_one_line(err: str, case: Case) -> None:
    assert "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, f"not one line: {err!r}"
    line = err.rstrip("\n")
    assert line.startswith(case.starts), line
    for piece in case.contains:
        assert piece in line, line


PARAMS = [
    pytest.param(case, command, id=f"{command}: {name}")
    for name, case in CASES.items()
    for command in case.commands
]


@pytest.mark.parametrize(("case", "command"), PARAMS)
def test_bad_input_exits_2_with_one_line(
    case: Case,
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    simsched_cli,
) -> None:
    write_case(case, tmp_path)
    monkeypatch.chdir(tmp_path)  # messages show the file as the user typed it: x.yaml
    before = set(tmp_path.iterdir())
    out_args = ("--out", "out") if command == "scenario" else ()
    code, out, err = simsched_cli(command, "x.yaml", *case.args, *out_args)
    assert code == 2
    assert out == ""
    assert_one_line(err, case)
    assert set(tmp_path.iterdir()) == before  # no output folder, no temporary folder


def test_a_good_trace_scenario_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simsched_cli
) -> None:
    # the control for the trace cases above: the same setup with a good trace succeeds
    write_case(trace_case(GOOD_ROWS, ""), tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = simsched_cli("scenario", "x.yaml", "--out", "out")
    assert (code, err) == (0, "")
    assert "tenant_chat_pro" in out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "requests.csv",
        "summary.json",
        "tenants.csv",
        "timeline.csv",
    ]


def test_out_that_is_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simsched_cli) -> None:
    (tmp_path / "notes.txt").write_text("keep me\n")
    monkeypatch.chdir(tmp_path)
    scenario = str(REPO / "scenarios" / "noisy_neighbor.yaml")
    code, _, err = simsched_cli("scenario", scenario, "--out", "notes.txt")
    assert code == 2
    assert err == "notes.txt: --out: exists and is not a folder\n"
    assert (tmp_path / "notes.txt").read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("scenario",), "Missing argument"),
        (("validate",), "Missing argument"),
        (("scenario", "x.yaml", "--bogus"), "No such option: --bogus"),
        (("scenario", "x.yaml", "--format", "xml"), "Invalid value for '--format'"),
        (("scenario", "x.yaml", "--out"), "requires an argument"),
        (("simulate", "x.yaml"), "No such command 'simulate'"),
    ],
)
def test_usage_errors_exit_2_without_a_traceback(
    args: tuple[str, ...],
    message: str,
    simsched_cli,
) -> None:
    code, out, err = simsched_cli(*args)
    assert code == 2
    assert message in err
    assert "Traceback" not in err + out


@pytest.mark.slow  # the one real process
def test_the_installed_script_reports_bad_input(tmp_path: Path) -> None:
    """The one real process: exit status and stderr as a shell sees them."""
    (tmp_path / "x.yaml").write_text("tenants: []\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "simsched", "scenario", "x.yaml", "--out", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("x.yaml: tenants: ")
    assert done.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.yaml"]
