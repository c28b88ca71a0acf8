"""Shared test helpers: small scenarios built in Python around a trace CSV, and their decisions;
`simsched` run in-process; pool workers forked with simsched already imported; the process
table read from /proc; the figures a report draws, and the shipped noisy_neighbor report drawn
once per test process.

The helpers are fixtures (pytest's way of sharing code between test modules). The scenario ones
are session-scoped so that hypothesis tests may use them: hypothesis reruns a test body many
times inside one function-scoped fixture instance, which it rightly refuses.
"""

from __future__ import annotations

import csv
import itertools
import math
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from simsched.cli.app import main
from simsched.config.loading import load_scenario, validate
from simsched.config.scenario import Scenario
from simsched.results.frames import SimulationResult
from simsched.results.rounding import reference_decisions
from simsched.results.simulate import simulate
from simsched.sim.engine import run_variant
from simsched.workload.build import build_workload

REPO = Path(__file__).resolve().parents[1]

# The modules a pool worker runs (a sweep's or plan's points, a calibration's cases). Sweeps
# with the default --jobs, and plans and fits with jobs=2, start worker pools through the
# forkserver (simsched/studies/orphans.py); each worker would import simsched, pandas and
# numpy again, one to two CPU-seconds a worker, for each of the suite's pools (scipy is the
# fit's own import, in the parent: workers only simulate). Preloaded,
# the forkserver (one per test process, started by its first pool) imports them once and every
# worker is forked with them in place. simsched itself does not preload: a command killed
# while its forkserver is still importing would leave a late worker that prints a traceback.
WORKER_MODULES = ["simsched.studies.runners", "simsched.studies.calibration.fit"]
multiprocessing.set_forkserver_preload(WORKER_MODULES)
NOISY_NEIGHBOR = REPO / "scenarios" / "noisy_neighbor.yaml"
# Report tests check structure (files, figures, axes, labels), not pixels: they draw at low DPI.
TEST_DPI = 20

TRACE_HEADER = (
    "request_id",
    "tenant_id",
    "arrival_ms",
    "prefill_tokens",
    "decode_tokens",
    "priority_class",
)

# (request_id, tenant_id, arrival_ms, prefill_tokens, decode_tokens[, priority_class])
TraceRow = Sequence[Any]


class Decision(NamedTuple):
    """One recorded outcome, as the engine records it; `dispatch_ms` is None for a shed."""

    request_id: str
    status_code: int
    reason: str
    dispatch_ms: float | None
    queue_wait_ms: float
    ttft_ms: float
    kv_occupancy_ratio: float


def write_trace(path: Path, rows: Iterable[TraceRow]) -> Path:
    """Write a trace CSV; floats are written with `repr` so they read back bit for bit."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(TRACE_HEADER)
        for row in rows:
            cells = [repr(v) if isinstance(v, float) else v for v in row]
            writer.writerow(cells + [""] * (len(TRACE_HEADER) - len(cells)))
    return path


@pytest.fixture(scope="session")
def make_scenario(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Scenario]:
    """`make_scenario(rows, tenants, **sections)`: a validated scenario replaying `rows`.

    `tenants` are raw tenant mappings (`{"id": "a", "priority": "batch", ...}`); `sections` are
    raw top-level sections (`cluster={...}`, `scheduler={...}`, `admission={...}`).
    """
    folder = tmp_path_factory.mktemp("traces")
    counter = itertools.count()

    def make(rows: Iterable[TraceRow], tenants: list[dict[str, Any]], **sections: Any) -> Scenario:
        path = write_trace(folder / f"trace-{next(counter)}.csv", rows)
        raw = {"name": "test", "tenants": tenants, "trace": {"path": str(path)}, **sections}
        return validate(raw, "test")

    return make


def decisions_of(scenario: Scenario) -> list[Decision]:
    """Run the scenario's base variant and return its outcomes in decision order."""
    table = build_workload(scenario)
    recorder = run_variant(scenario, table).recorder
    # The recorder keeps each field at the request's seq and the decision order in `order`;
    # its times and ratios are raw, rounded as the reference records them by the results.
    rounded = reference_decisions(
        recorder.ttft_ms, recorder.queue_wait_ms, recorder.kv_occupancy_ratio
    )
    return [
        Decision(
            request_id=str(table.request_id[seq]),
            status_code=recorder.status_code[seq],
            reason=recorder.reason[seq],
            dispatch_ms=_none_if_nan(recorder.dispatch_ms[seq]),
            queue_wait_ms=float(rounded["queue_wait_ms"][seq]),
            ttft_ms=float(rounded["ttft_ms"][seq]),
            kv_occupancy_ratio=float(rounded["kv_occupancy_ratio"][seq]),
        )
        for seq in recorder.order
    ]


def _none_if_nan(value: float) -> float | None:
    # NaN never equals itself, so whole-list comparisons need a comparable "no dispatch".
    return None if math.isnan(value) else value


@pytest.fixture(scope="session")
def decisions() -> Callable[[Scenario], list[Decision]]:
    return decisions_of


class CliRun(NamedTuple):
    """What `simsched ARGS` did: its exit status (None or 0 for success) and its two streams."""

    code: int | str | None
    out: str
    err: str


@pytest.fixture
def simsched_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., CliRun]:
    """`simsched_cli(*args)`: `simsched ARGS` in-process, through the console script's function
    (so the one-line error handling is what is tested), with stdout and stderr captured.

    In-process, not a subprocess: importing simsched again costs a second or more a command.
    """

    def run(*args: object) -> CliRun:
        monkeypatch.setattr(sys, "argv", ["simsched", *map(str, args)])
        with pytest.raises(SystemExit) as exit_info:
            main()
        captured = capsys.readouterr()
        return CliRun(exit_info.value.code, captured.out, captured.err)

    return run


class ProcessStat(NamedTuple):
    """The fields of /proc/PID/stat the process tests read (proc(5))."""

    state: str
    parent: int
    session: int


class ProcessTable:
    """The live process table, read from /proc (Linux only): who started whom, who is alive."""

    @staticmethod
    def stats() -> dict[int, ProcessStat]:
        table: dict[int, ProcessStat] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:  # the command name may hold spaces and parentheses: split after the last ")"
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:  # it ended while we read
                    continue
                table[int(entry.name)] = ProcessStat(fields[0], int(fields[1]), int(fields[3]))
        return table

    @classmethod
    def descendants(cls, pid: int) -> set[int]:
        """Every process `pid` started, and theirs, zombies included."""
        parents = {child: stat.parent for child, stat in cls.stats().items()}
        found: set[int] = set()
        frontier = {pid}
        while frontier:
            frontier = {child for child, parent in parents.items() if parent in frontier} - found
            found |= frontier
        return found

    @classmethod
    def in_session(cls, session: int) -> set[int]:
        """The live (not zombie) processes of a session."""
        return {
            pid
            for pid, stat in cls.stats().items()
            if stat.session == session and stat.state != "Z"
        }

    @staticmethod
    def alive(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"

    @staticmethod
    def wait_until(condition: Callable[[], bool], limit_s: float, poll_s: float = 0.1) -> bool:
        """Poll until `condition()` holds; whether it did. The limit only stops a hung run, it
        times nothing: a loaded machine can take tens of seconds to import simsched or start a
        worker, so callers assert the condition itself, never the time taken."""
        deadline = time.monotonic() + limit_s
        while not condition():
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)
        return True


@pytest.fixture(scope="session")
def processes() -> type[ProcessTable]:
    if sys.platform != "linux":
        pytest.skip("reads /proc")
    return ProcessTable


def record_figures(patch: pytest.MonkeyPatch, seen: dict[str, Any]) -> None:
    """Keep in `seen`, by file name, every figure a report or plot function saves (saving draws
    it, so its tick labels exist); the figures are still drawn and saved as usual."""
    from simsched.outputs.report import (
        cache_plots,
        chargeback_plots,
        page,
        plan_plots,
        scaling_plots,
        scenario_plots,
        sweep_plots,
    )

    real = page.save

    def keep(fig, folder, file, title, caption):
        seen[file] = fig
        return real(fig, folder, file, title, caption)

    modules = (page, scenario_plots, sweep_plots, plan_plots, cache_plots, scaling_plots)
    for module in (*modules, chargeback_plots):
        patch.setattr(module, "save", keep, raising=False)


@pytest.fixture
def low_dpi(monkeypatch: pytest.MonkeyPatch) -> None:
    from simsched.outputs.report import page

    monkeypatch.setattr(page, "DPI", TEST_DPI)


@pytest.fixture(scope="session", autouse=True)
def every_report_at_low_dpi() -> Iterator[None]:
    """Every test draws its figures at the low DPI, inside tests/outputs or not (CLI, plan and
    cache tests write reports too): no test checks pixels, and rasterising at 100 DPI costs
    seconds a report. Set once per test process; `low_dpi` stays for tests that ask for it."""
    from simsched.outputs.report import page

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(page, "DPI", TEST_DPI)
        yield


@pytest.fixture(scope="session", autouse=True)
def the_cli_built_once() -> Iterator[None]:
    """`simsched_cli` and the CLI tests run the console script hundreds of times in-process;
    typer turns the app into a click command on every call (10 ms each). The command is built
    from the app's registered functions alone and click makes a fresh context for every run,
    so one command serves every call; other typer apps (tests register their own) still build
    theirs."""
    import typer.main

    from simsched.cli.app import app

    real = typer.main.get_command
    built = real(app)

    def get_command(instance: Any) -> Any:
        return built if instance is app else real(instance)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.main, "get_command", get_command)
        yield


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Every figure a report or plot function saves in this test, by file name."""
    seen: dict[str, Any] = {}
    record_figures(monkeypatch, seen)
    return seen


class DrawnReport(NamedTuple):
    """A report drawn once: the run, what `write_report` returned, the folder asked for, and
    the figures it saved."""

    result: SimulationResult
    written: Path
    folder: Path
    figures: dict[str, Any]


@pytest.fixture(scope="session")
def noisy_neighbor_report(tmp_path_factory: pytest.TempPathFactory) -> DrawnReport:
    """The shipped noisy_neighbor scenario (two variants, a timeline, shedding: every scenario
    plot but the prefix cache's) and its report through `write_report`, drawn once per test
    process: drawing is the dearest step of a report test, and several tests read this one.
    Tests must not change its files."""
    from simsched.outputs.report import page, write_report

    result = simulate(load_scenario(NOISY_NEIGHBOR))
    folder = tmp_path_factory.mktemp("noisy-neighbor-report") / "report"
    seen: dict[str, Any] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(page, "DPI", TEST_DPI)
        record_figures(patch, seen)
        written = write_report(result, folder)
    return DrawnReport(result, written, folder, seen)
