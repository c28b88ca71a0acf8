"""Running a sweep's points: in this process, on a local process pool, or on a Dask cluster.

A `Task` is all a worker needs (the file path and the point's overrides, a few short strings),
so nothing big is pickled and a Dask worker reads the same file. Whatever runs them, outcomes
come back in task order, and a point that fails is that point's outcome, not the sweep's end.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from simsched.config.loading import load_scenario
from simsched.errors import InputError
from simsched.results.metrics import metrics_rows
from simsched.results.simulate import simulate
from simsched.studies.grid import relabel

Progress = Callable[[int, int], None]
Outcome = tuple[list[dict[str, Any]], str | None]  # a point's metrics rows, or its error


@dataclass(frozen=True)
class Task:
    """All a worker needs: the file, the overrides, and how to name them in an error."""

    index: int
    path: str
    label: str  # the file as the user named it
    overrides: tuple[str, ...]
    labels: tuple[tuple[str, str], ...]


def run_task(task: Task) -> Outcome:
    """Load and simulate one point; any failure is the point's, never the sweep's."""
    try:
        result = simulate(load_scenario(task.path, list(task.overrides)))
        return metrics_rows(result), None
    except InputError as exc:
        source = task.label if exc.source == task.path else exc.source
        return [], str(relabel(exc, dict(task.labels), source))
    except Exception as exc:  # a bug at one point must not lose the other points' results
        return [], f"{type(exc).__name__}: {exc}"


def run_local(tasks: list[Task], jobs: int, tick: Progress) -> list[Outcome]:
    """In this process when one job suffices; else on a pool of `jobs` processes."""
    if jobs == 1 or len(tasks) <= 1:
        outcomes = []
        for task in tasks:
            outcomes.append(run_task(task))
            tick(len(outcomes), len(tasks))
        return outcomes
    context = multiprocessing.get_context(_start_method())
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context)
    try:
        futures = [pool.submit(run_task, task) for task in tasks]
        for done, _ in enumerate(as_completed(futures), start=1):
            tick(done, len(tasks))
        return [_outcome(future) for future in futures]
    finally:  # on Ctrl-C, drop the points not yet started rather than wait for them
        pool.shutdown(wait=True, cancel_futures=True)


def _start_method() -> str:
    # fork copies whatever threads the caller runs (a Dask client, a notebook's); forkserver
    # and spawn start clean workers
    methods = multiprocessing.get_all_start_methods()
    return "forkserver" if "forkserver" in methods else "spawn"


def _outcome(future: Future | Any) -> Outcome:
    try:
        return future.result()
    except Exception as exc:  # a worker that died (killed, out of memory)
        return [], f"{type(exc).__name__}: {exc}"


def run_dask(tasks: list[Task], address: str, tick: Progress, timeout_s: float) -> list[Outcome]:
    """The same tasks on an existing Dask cluster; results in task order."""
    from distributed import as_completed as dask_completed  # lazy: the CLI starts fast

    client = connect_dask(address, timeout_s)
    try:
        futures = client.map(run_task, tasks, pure=False)
        for done, _ in enumerate(dask_completed(futures), start=1):
            tick(done, len(tasks))
        return [_outcome(future) for future in futures]
    finally:
        client.close()


def connect_dask(address: str, timeout_s: float):
    try:
        from distributed import Client
    except ImportError:
        raise InputError(
            "--dask", address, "needs dask.distributed (pip install dask[distributed])"
        ) from None
    try:
        return Client(address, timeout=timeout_s)
    except (OSError, ValueError, TypeError) as exc:
        raise InputError("--dask", address, f"cannot reach the Dask scheduler: {exc}") from None
