"""Running a sweep's points: in this process, on a local process pool, or on a Dask cluster.

A `Task` is all a worker needs (the file path and the point's overrides, a few short strings),
so nothing big is pickled and a Dask worker reads the same file. Whatever runs them, outcomes
come back in task order, and a point that fails is that point's outcome, not the sweep's end.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, NamedTuple

from simsched.config.loading import load_scenario, scenario_from_mapping
from simsched.errors import InputError
from simsched.results.simulate import simulate
from simsched.results.tenants import metrics_rows
from simsched.studies.grid import relabel
from simsched.studies.orphans import watched_pool
from simsched.studies.plan_usage import RunUsage, run_usage
from simsched.workload.context_limits import ContextError

Progress = Callable[[int, int], None]


class Outcome(NamedTuple):
    """A point's metrics rows, or its error; with `Task.usage`, its run's `RunUsage` too."""

    rows: list[dict[str, Any]]
    error: str | None
    usage: RunUsage | None = None


class InputProblem(str):
    """An Outcome's error that is the user's input (an InputError's line), not a bug: a plan
    reports it as bad input. A str, so sweeps and pickling treat it as any other message."""


class ContextProblem(InputProblem):
    """An InputProblem that is a workload longer than the model serves (a ContextError)."""


@dataclass(frozen=True)
class Task:
    """All a worker needs: the file, the overrides, and how to name them in an error."""

    index: int
    path: str
    label: str  # the file as the user named it
    overrides: tuple[str, ...]
    labels: tuple[tuple[str, str], ...]
    raw: str | None = None  # a scenario given as an object: its settings as JSON, not `path`
    variants: tuple[str, ...] = ()  # the variants to run; () runs every one
    classes: bool = False  # add the priority classes' rows (plans judge class SLOs)
    study: str = ""  # the sweep or plan it belongs to: workloads are reused within one only
    # return the first variant's utilisation too: a plan's probes at the scenario's own seed,
    # so that the answer's utilisation is read from its probe, not simulated again
    usage: bool = False


# A worker (or this process, with one job) keeps the last workloads it generated: the probes of a
# plan and the points of a sweep that vary only the cluster share them (the key is the settings
# that make a workload: seed, tenants, trace), so each is generated once per process. Only within
# one study: a long-lived Dask worker must not serve a trace file's old contents to the next one.
_WORKLOADS: dict = {}
_WORKLOADS_KEPT = 4
_STUDY = [""]


def task_scenario(task: Task):
    # only the variants it runs, as `scenario --variant` validates them
    variants = list(task.variants) or None
    if task.raw is None:
        return load_scenario(task.path, list(task.overrides), variants)
    raw = json.loads(task.raw)
    return scenario_from_mapping(raw, list(task.overrides), task.label, None, variants)


def run_task(task: Task) -> Outcome:
    """Load and simulate one point; any failure is the point's, never the sweep's."""
    try:
        if len(_WORKLOADS) > _WORKLOADS_KEPT or task.study != _STUDY[0]:
            _WORKLOADS.clear()
            _STUDY[0] = task.study
        scenario = task_scenario(task)
        result = simulate(scenario, list(task.variants) or None, workloads=_WORKLOADS)
        usage = run_usage(result, task.variants[0]) if task.usage else None
        return Outcome(metrics_rows(result, classes=task.classes), None, usage)
    except InputError as exc:
        source = task.label if exc.source in (task.path, "") else exc.source
        kind = ContextProblem if isinstance(exc, ContextError) else InputProblem
        return Outcome([], kind(relabel(exc, dict(task.labels), source)))
    except Exception as exc:  # a bug at one point must not lose the other points' results
        return Outcome([], f"{type(exc).__name__}: {exc}")


def run_local(tasks: list[Task], jobs: int, tick: Progress) -> list[Outcome]:
    """In this process when one job suffices; else on a pool of `jobs` processes."""
    with LocalPool(min(jobs, len(tasks))) as pool:
        return pool.run(tasks, tick)


class LocalPool:
    """`jobs` worker processes kept for several batches of tasks (a plan's rounds reuse them,
    and with them each worker's workload cache); one job runs the tasks in this process."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> LocalPool:
        if self.jobs > 1:
            # each worker ends itself if this process dies without stopping it (SIGKILL)
            self.pool = watched_pool(self.jobs)
        return self

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        if self.pool is None:
            return
        if exc_type is not None:  # Ctrl-C, SIGTERM or an error: no worker may run on after us
            _stop_workers(self.pool)
        self.pool.shutdown(wait=True, cancel_futures=True)  # drop the tasks not yet started

    def run(self, tasks: list[Task], tick: Progress) -> list[Outcome]:
        if self.pool is None:
            outcomes = []
            for task in tasks:
                outcomes.append(run_task(task))
                tick(len(outcomes), len(tasks))
            return outcomes
        futures = [self.pool.submit(run_task, task) for task in tasks]
        for done, _ in enumerate(as_completed(futures), start=1):
            tick(done, len(tasks))
        if futures and all(_broken(future) for future in futures):
            raise WorkersDidNotStart(WORKERS_DID_NOT_START)
        return [_outcome(future) for future in futures]


class WorkersDidNotStart(RuntimeError):
    """Every worker process died before finishing a single point."""


WORKERS_DID_NOT_START = (
    "the worker processes died before finishing any point. In a script, put the code that runs "
    'the sweep or plan under `if __name__ == "__main__":` (each worker imports the main '
    "module, and without the guard starts the sweep again), or pass jobs=1 to run in this process"
)


def _broken(future: Future) -> bool:
    return isinstance(future.exception(), BrokenProcessPool)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    # The executor keeps its worker processes in `_processes` (the same since Python 3.2);
    # shutdown() alone would wait for the points they are running.
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _outcome(future: Future | Any) -> Outcome:
    try:
        return future.result()
    except Exception as exc:  # a worker that died (killed, out of memory)
        return Outcome([], f"{type(exc).__name__}: {exc}")


def run_dask(tasks: list[Task], address: str, tick: Progress, timeout_s: float) -> list[Outcome]:
    """The same tasks on an existing Dask cluster; results in task order."""
    client = connect_dask(address, timeout_s)
    try:
        return run_on_client(client, tasks, tick)
    finally:
        client.close()


def run_on_client(client, tasks: list[Task], tick: Progress) -> list[Outcome]:
    """The tasks on a connected Dask client (a plan keeps one open across its rounds)."""
    from distributed import as_completed as dask_completed

    futures = client.map(run_task, tasks, pure=False)
    for done, _ in enumerate(dask_completed(futures), start=1):
        tick(done, len(tasks))
    return [_outcome(future) for future in futures]


def connect_dask(address: str, timeout_s: float):
    """A client of the scheduler at `address`, or an InputError within about `timeout_s`.

    A plain TCP address is probed first (`probe_scheduler`), so that the client never reads a
    stranger's bytes as a message size. The connection is then made on a helper thread and
    waited for with a deadline: a server that is not a Dask scheduler can still make the client
    wait for ever (one that accepts and stays silent) or fail in any other way.
    """
    try:
        from distributed import Client
    except ImportError:
        raise InputError(
            "--dask", address, "needs dask.distributed (pip install dask[distributed])"
        ) from None
    probe_scheduler(address, timeout_s)
    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            box["client"] = Client(address, timeout=timeout_s)
        except BaseException as exc:  # whatever a stranger's reply makes of the client
            box["error"] = exc

    thread = threading.Thread(target=connect, name="simsched-dask-connect", daemon=True)
    thread.start()
    thread.join(timeout_s + 1.0)
    if thread.is_alive():
        raise InputError("--dask", address, f"no Dask scheduler answered within {timeout_s:g} s")
    if "error" in box:
        error = box["error"]
        problem = (
            str(error)
            if isinstance(error, (OSError, ValueError, TypeError))
            else (f"not a Dask scheduler ({type(error).__name__})")
        )
        raise InputError("--dask", address, f"cannot reach the Dask scheduler: {problem}")
    return box["client"]


# A scheduler's first message is its handshake, a few hundred bytes; 1 MiB is far beyond it.
MAX_HANDSHAKE_BYTES = 1024**2
DASK_PORT = 8786


def probe_scheduler(address: str, timeout_s: float) -> None:
    """Read the first 8 bytes a `tcp://` server sends and refuse it unless they announce a
    message of a plausible size, as a Dask scheduler's handshake does.

    Dask's TCP comm sends each message after its length (8 bytes, native order) and its reader
    allocates that length at once: an HTTP reply or junk read that way asks for exabytes (a
    MemoryError inside the client). A scheduler speaks first on a new connection, so the probe
    sends nothing; other schemes (tls://, ucx://) are left to the client.
    """
    scheme, _, rest = address.rpartition("://")
    if scheme not in ("", "tcp"):
        return
    host, port = _host_port(rest, address)
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as conn:
            conn.settimeout(timeout_s)
            head = _read_exactly(conn, 8)
    except TimeoutError:
        raise InputError(
            "--dask", address, f"no Dask scheduler answered within {timeout_s:g} s"
        ) from None
    except OSError as exc:
        raise InputError(
            "--dask", address, f"cannot reach the Dask scheduler: {exc.strerror or exc}"
        ) from None
    size = struct.unpack("Q", head)[0] if len(head) == 8 else 0
    if not 0 < size <= MAX_HANDSHAKE_BYTES:
        raise InputError(
            "--dask", address, "not a Dask scheduler (its first bytes are not a Dask message)"
        )


def _host_port(rest: str, address: str) -> tuple[str, int]:
    host, sep, port = rest.rpartition(":")
    if not sep or "]" in port:  # no port given (an IPv6 literal ends in `]`)
        host, port = rest, str(DASK_PORT)
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        raise InputError("--dask", address, f"the port {port!r} is not a number") from None


def _read_exactly(conn: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = conn.recv(count - len(data))
        if not chunk:  # closed early: whatever came is not a message
            break
        data += chunk
    return data
