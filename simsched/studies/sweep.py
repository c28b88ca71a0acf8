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

The parts live beside it in `simsched.studies`: `grid` (flags to points), `runners` (where
points run) and `sweep_frame` (the table); `simsched.outputs.sweep_table` writes and reads its file.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pandas as pd

from simsched.config.loading import (
    load_scenario,
    scenario_from_mapping,
    settings_of,
)
from simsched.config.scenario import Scenario
from simsched.config.shadowing import (
    refuse_overlapping,
    refuse_shadowed,
    refuse_shadowed_overrides,
)
from simsched.errors import InputError
from simsched.outputs.progress import ProgressLine
from simsched.studies.grid import (
    Point,
    check_axes,
    grid_points,
    make_axes,
    make_points,
    param_names,
)
from simsched.studies.limits import check_points
from simsched.studies.runners import Outcome, Progress, Task, run_dask, run_local
from simsched.studies.sweep_frame import build_frame

DASK_CONNECT_TIMEOUT_S = 5  # a scheduler that does not answer by then is an input error


def sweep(
    path: str | Path | Scenario,
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
    raw = json.dumps(settings_of(path)) if isinstance(path, Scenario) else None
    label = path.name if isinstance(path, Scenario) else str(path)
    load = _loader(path, raw, label)
    base = load(list(overrides or []))  # a bad file or --set fails the sweep, not a point
    axes = make_axes(grid, zip_ or {}, label)
    seeds = _positive(seeds, "--seeds", label)
    check_points(grid_points(axes), seeds, base.limits, label)  # before anything is loaded
    refuse_shadowed_overrides(base, overrides, None, label)
    _refuse_shadowed_paths(base, axes, label)
    check_axes(path, overrides or [], axes, load)
    points = make_points(axes, base.seed, seeds)
    study = uuid.uuid4().hex  # workers reuse workloads within this sweep only
    tasks = [_task(path, raw, label, overrides or [], point, study) for point in points]
    runner = (
        (lambda tick: run_dask(tasks, dask_address, tick, DASK_CONNECT_TIMEOUT_S))
        if dask_address
        else (lambda tick: run_local(tasks, _jobs(jobs, label), tick))
    )
    return build_frame(points, _with_progress(runner, len(tasks), progress), param_names(axes))


def _refuse_shadowed_paths(base, axes: list, label: str) -> None:
    """A variant that sets a swept path itself would silently keep its own value at every point;
    so would one path swept under two names (a tenant's id and its index)."""
    swept = [(flag, path) for flag, paths, _ in axes for path in paths]
    refuse_overlapping(base, swept, label)
    for flag, path in swept:
        refuse_shadowed(
            base, path, f"{flag} {path}", None, label, "take it out of the variant to sweep it"
        )


def _task(path, raw: str | None, label: str, overrides: list[str], point: Point, study) -> Task:
    # workers may run in another folder than this one
    resolved = label if raw is not None else str(Path(path).resolve())
    texts = (*overrides, *point.overrides)
    # class rows (`interactive`, `batch`) as plans judge them: one definition for both
    return Task(point.index, resolved, label, texts, point.labels, raw, classes=True, study=study)


def _loader(path, raw: str | None, label: str):
    """Overrides -> a scenario, from the file or from the given scenario's settings."""
    if raw is None:
        return lambda texts: load_scenario(path, texts)
    return lambda texts: scenario_from_mapping(json.loads(raw), texts, label)


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
