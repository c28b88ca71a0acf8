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

The parts live in `simsched.analysis`: `grid` (flags to points), `runners` (where points run)
and `table` (the frame and its file); their public names are importable from here too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from simsched.config.loading import load_scenario, shadowing_variants
from simsched.errors import InputError
from simsched.outputs.progress import ProgressLine
from simsched.outputs.sweep_table import (
    FIXED_COLUMNS,
    TABLE_SUFFIXES,
    build_frame,
    check_table_path,
    read_table,
    write_table,
)
from simsched.studies.grid import (
    Axis,
    Point,
    check_axes,
    make_axes,
    make_points,
    param_names,
    parse_grid,
    relabel,
    split_values,
)
from simsched.studies.runners import (
    Outcome,
    Progress,
    Task,
    connect_dask,
    run_dask,
    run_local,
    run_task,
)

__all__ = [
    "DASK_CONNECT_TIMEOUT_S",
    "FIXED_COLUMNS",
    "TABLE_SUFFIXES",
    "Axis",
    "Outcome",
    "Point",
    "Progress",
    "Task",
    "build_frame",
    "check_table_path",
    "connect_dask",
    "make_points",
    "parse_grid",
    "read_table",
    "relabel",
    "run_dask",
    "run_local",
    "run_task",
    "split_values",
    "sweep",
    "write_table",
]

DASK_CONNECT_TIMEOUT_S = 5  # a scheduler that does not answer by then is an input error


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
    axes = make_axes(grid, zip_ or {}, label)
    _refuse_shadowed_paths(base, axes, label)
    check_axes(path, overrides or [], axes)
    points = make_points(axes, base.seed, _positive(seeds, "--seeds", label))
    tasks = [_task(path, overrides or [], point) for point in points]
    runner = (
        (lambda tick: run_dask(tasks, dask_address, tick, DASK_CONNECT_TIMEOUT_S))
        if dask_address
        else (lambda tick: run_local(tasks, _jobs(jobs, label), tick))
    )
    return build_frame(points, _with_progress(runner, len(tasks), progress), param_names(axes))


def _refuse_shadowed_paths(base, axes: list, label: str) -> None:
    """A variant that sets a swept path itself would silently keep its own value at every point."""
    for flag, paths, _ in axes:
        for swept in paths:
            shadowed = shadowing_variants(base, swept)
            if shadowed:
                variant, key = shadowed[0]
                raise InputError(
                    label,
                    f"{flag} {swept}",
                    f"variant {variant!r} sets {key} itself, so the sweep would not change it "
                    "there; take it out of the variant to sweep it",
                )


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
