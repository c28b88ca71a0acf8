"""Parameter sweeps: every point of a grid, each point's variants, one tidy DataFrame.

A point is one combination of the grid values (the cartesian product of the `grid` axes, then the
`zip_` values, which vary together as one more axis) and one seed replicate; points are numbered
in that order, the last axis varying fastest and the seed fastest of all. Replicate `i` (0-based)
of a point runs with `seed = base + i`, where `base` is the point's own seed (the scenario's, or
the grid's when `seed` is swept), so a sweep is as reproducible as a single run.

Workers get only the file path and the point's overrides (a few short strings) and load the
scenario themselves, so nothing big is pickled and a worker on a Dask cluster reads the same file
(it must see the same file system). A point that fails, at validation or while running, gets one
row with its `error` and the sweep goes on. Rows are sorted by point, so the table is the same
whatever the job count or the executor.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.errors import InputError
from simsched.loading import load_scenario
from simsched.metrics import COUNT_METRICS, METRIC_COLUMNS, metrics_rows
from simsched.overrides import OverrideError, parse_assignment, split_path
from simsched.progress import ProgressLine
from simsched.simulation import simulate

Progress = Callable[[int, int], None]
Outcome = tuple[list[dict[str, Any]], str | None]  # a point's metrics rows, or its error
DASK_CONNECT_TIMEOUT_S = 5
FIXED_COLUMNS = ["point", "seed", "variant", "tenant", *METRIC_COLUMNS, "error"]
TABLE_SUFFIXES = (".parquet", ".csv")


@dataclass(frozen=True)
class Point:
    index: int
    seed: int | None
    params: dict[str, Any]
    overrides: tuple[str, ...]  # `path=json value`, the point's own
    labels: tuple[tuple[str, str], ...]  # override -> the flag that brought it, for messages


def sweep(
    path: str | Path,
    grid: dict[str, list],
    zip_: dict[str, list] | None = None,
    seeds: int = 1,
    jobs: int | None = None,
    dask_address: str | None = None,
    overrides: list[str] | None = None,
    progress: Progress | bool | None = None,
) -> pd.DataFrame:
    """Run every point; a row per point x variant x tenant plus an `all` row per variant.

    `progress`: None draws a progress line on stderr when it is a terminal, False draws nothing,
    a callable gets `(done, total)` after each point. `dask_address` runs the points on that
    Dask scheduler instead of local processes (`jobs` is then ignored).
    """
    label = str(path)
    base = load_scenario(path, overrides)  # a bad file or --set fails the sweep, not a point
    axes = _axes(grid, zip_ or {}, label)
    _check_axes(path, overrides or [], axes)
    points = make_points(axes, base.seed, _positive(seeds, "--seeds", label))
    tasks = [_task(path, overrides or [], point) for point in points]
    runner = (
        (lambda tick: run_dask(tasks, dask_address, tick))
        if dask_address
        else (lambda tick: run_local(tasks, _jobs(jobs, label), tick))
    )
    return build_frame(points, _with_progress(runner, len(tasks), progress), _param_names(axes))


def _task(path: str | Path, overrides: list[str], point: Point) -> Task:
    resolved = str(Path(path).resolve())  # workers may run in another folder than this one
    return Task(point.index, resolved, str(path), (*overrides, *point.overrides), point.labels)


def _with_progress(runner, total: int, progress: Progress | bool | None) -> list[Outcome]:
    """None: a progress line on a terminal; False: none; a callable: called with (done, total)."""
    line = ProgressLine("sweep") if progress is None else None
    tick = line or (progress if callable(progress) else lambda done, total: None)
    tick(0, total)
    try:
        return runner(tick)
    finally:
        if line:
            line.close()


# -- grids --------------------------------------------------------------------------------------

Axis = tuple[str, list[str], list[tuple[Any, ...]]]  # (flag, paths, a tuple of values per step)


def parse_grid(specs: list[str], flag: str, label: str = "") -> dict[str, list]:
    """`["a.b=1,2,3", ...]` -> {"a.b": [1, 2, 3]}; each value is read as a YAML scalar.

    Commas inside brackets or quotes do not split, so `x=[1,2],[3,4]` has two list values.
    """
    parsed: dict[str, list] = {}
    for spec in specs:
        path, sep, text = spec.partition("=")
        where = f"{flag} {spec}"
        if not sep or not path.strip():
            raise InputError(label, where, "expected PATH=VALUE,VALUE,...")
        items = [item.strip() for item in split_values(text)]
        if any(not item for item in items):
            raise InputError(label, where, "empty value (values are separated by commas)")
        if path.strip() in parsed:
            raise InputError(label, where, f"{path.strip()} is swept twice")
        # each value is read exactly as the value of a `--set` would be
        parsed[path.strip()] = [parse_assignment(f"x={item}")[1] for item in items]
    return parsed


def split_values(text: str) -> list[str]:
    items, current, depth, quote = [], "", 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth <= 0:
            items.append(current)
            current = ""
            continue
        current += char
    return [*items, current]


def _axes(grid: dict[str, list], zip_: dict[str, list], label: str) -> list[Axis]:
    axes: list[Axis] = []
    for path, values in grid.items():
        _check_path(path, values, "--grid", label)
        axes.append(("--grid", [path], [(v,) for v in values]))
    for path, values in zip_.items():
        _check_path(path, values, "--zip", label)
        if path in grid:
            raise InputError(label, f"--zip {path}", "is also a --grid path")
    if zip_:
        lengths = {path: len(values) for path, values in zip_.items()}
        if len(set(lengths.values())) > 1:
            counts = ", ".join(f"{p}: {n}" for p, n in lengths.items())
            raise InputError(label, "--zip", f"zipped paths need as many values each ({counts})")
        axes.append(("--zip", list(zip_), list(zip(*zip_.values(), strict=True))))
    return axes


def _check_path(path: str, values: list, flag: str, label: str) -> None:
    try:
        split_path(path)
    except OverrideError as exc:
        raise InputError(label, f"{flag} {path}", exc.problem) from None
    if not values:
        raise InputError(label, f"{flag} {path}", "no values")


def _check_axes(path: str | Path, overrides: list[str], axes: list[Axis]) -> None:
    """A path that no value of its axis can set (a typo, say) fails the sweep up front.

    Each axis is tried alone on the scenario, value after value, until one loads; a value that
    fails only at some points (with another axis's value, say) fails only those points.
    """
    for flag, paths, steps in axes:
        first_error = None
        for step in steps:
            texts, labels = _assignments(flag, paths, step)
            try:
                load_scenario(path, [*overrides, *texts])
                break
            except InputError as exc:
                first_error = first_error or relabel(exc, dict(labels))
        else:
            raise first_error


def make_points(axes: list[Axis], base_seed: int, seeds: int) -> list[Point]:
    points: list[Point] = []
    for steps in itertools.product(*(axis[2] for axis in axes)):
        texts, labels, params = [], [], {}
        for (flag, paths, _), step in zip(axes, steps, strict=True):
            text, label = _assignments(flag, paths, step)
            texts += text
            labels += label
            params.update(zip(paths, step, strict=True))
        for replicate in range(seeds):
            points.append(_point(len(points), params, texts, labels, base_seed, seeds, replicate))
    return points


def _point(index, params, texts, labels, base_seed, seeds, replicate) -> Point:
    seed = params.get("seed", base_seed)
    if seeds == 1 or not isinstance(seed, int):
        return Point(index, seed if isinstance(seed, int) else None, params, (*texts,), (*labels,))
    text = f"seed={seed + replicate}"
    return Point(index, seed + replicate, params, (*texts, text), (*labels, (text, "--seeds")))


def _assignments(flag: str, paths: list[str], step: tuple) -> tuple[list[str], list]:
    texts = [f"{path}={json.dumps(value)}" for path, value in zip(paths, step, strict=True)]
    shown = ",".join(f"{p}={_show(v)}" for p, v in zip(paths, step, strict=True))
    return texts, [(text, f"{flag} {shown}") for text in texts]


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def relabel(exc: InputError, labels: dict[str, str], source: str | None = None) -> InputError:
    """The error as the user would name it: `--grid a=1` rather than the `--set` it became."""
    where = exc.where
    for text, flag in labels.items():
        if where.startswith(f"--set {text}"):
            where = flag + where[len(f"--set {text}") :]
            break
    return InputError(source if source is not None else exc.source, where, exc.message)


def _param_names(axes: list[Axis]) -> list[str]:
    # `seed` has its own column, which holds the seed each point actually ran with
    return [path for _, paths, _ in axes for path in paths if path != "seed"]


# -- running ------------------------------------------------------------------------------------


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


def run_dask(tasks: list[Task], address: str, tick: Progress) -> list[Outcome]:
    """The same tasks on an existing Dask cluster; results in task order."""
    from distributed import as_completed as dask_completed  # lazy: the CLI starts fast

    client = connect_dask(address)
    try:
        futures = client.map(run_task, tasks, pure=False)
        for done, _ in enumerate(dask_completed(futures), start=1):
            tick(done, len(tasks))
        return [_outcome(future) for future in futures]
    finally:
        client.close()


def connect_dask(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise InputError(
            "--dask", address, "needs dask.distributed (pip install dask[distributed])"
        ) from None
    try:
        return Client(address, timeout=DASK_CONNECT_TIMEOUT_S)
    except (OSError, ValueError, TypeError) as exc:
        raise InputError("--dask", address, f"cannot reach the Dask scheduler: {exc}") from None


def _positive(value: int, flag: str, label: str) -> int:
    if value < 1:
        raise InputError(label, flag, f"must be at least 1, got {value}")
    return value


def _jobs(jobs: int | None, label: str) -> int:
    if jobs is None:
        return (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else os.cpu_count() or 1
        )
    return _positive(jobs, "--jobs", label)


def build_frame(points: list[Point], outcomes: list[Outcome], params: list[str]) -> pd.DataFrame:
    records = []
    for point, (rows, error) in zip(points, outcomes, strict=True):
        head = {"point": point.index, "seed": point.seed}
        head |= {name: point.params[name] for name in params}
        records += [head | row | {"error": None} for row in rows]
        if error is not None:
            records.append(head | {"variant": None, "tenant": None, "error": error})
    columns = ["point", "seed", *params, *FIXED_COLUMNS[2:]]
    frame = pd.DataFrame.from_records(records, columns=columns)
    return _typed(frame, params)


def _typed(frame: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """Stable dtypes whether or not some point failed (a failed point has no metrics)."""
    for column in ["point", "seed", *COUNT_METRICS]:
        frame[column] = frame[column].astype("Int64")
    frame["slo_met"] = frame["slo_met"].astype("boolean")
    for column in ("variant", "tenant", "error"):
        frame[column] = frame[column].astype("string")
    for name in params:  # mixed kinds (1 and "auto") cannot share a parquet column
        if any(not isinstance(v, (int, float)) for v in frame[name]):
            frame[name] = frame[name].map(_show).astype("string")
    return frame


# -- files --------------------------------------------------------------------------------------


def check_table_path(out: str | Path) -> Path:
    out = Path(out)
    if out.suffix.lower() not in TABLE_SUFFIXES:
        raise InputError(str(out), "--out", "must end in .parquet or .csv")
    if out.is_dir():
        raise InputError(str(out), "--out", "is a folder, not a file")
    return out


def write_table(frame: pd.DataFrame, out: str | Path) -> Path:
    """Write the table (.parquet or .csv) to a temporary file beside `out`, then move it there."""
    out = check_table_path(out)
    staging = out.with_name(f".{out.name}.partial")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.suffix.lower() == ".parquet":
            frame.to_parquet(staging, index=False)
        else:
            frame.to_csv(staging, index=False, lineterminator="\n")
        os.replace(staging, out)
    except OSError as exc:
        raise InputError(str(out), "--out", f"cannot write: {exc.strerror or exc}") from None
    finally:
        staging.unlink(missing_ok=True)
    return out


def read_table(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise InputError(str(path), "", "a sweep table ends in .parquet or .csv")
    if not path.is_file():
        raise InputError(str(path), "", "no such file")
    try:
        if path.suffix.lower() == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except Exception as exc:  # any reader error is the file's fault, not ours
        raise InputError(str(path), "", f"cannot read the table: {exc}") from None
