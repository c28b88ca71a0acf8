"""Run a calibration: simulate every case, fit the settings, compare before and after.

The residual of a case is log(simulated / measured), so that 10% too high and 10% too low
weigh alike whatever the metric's unit. scipy's `least_squares` (trust-region reflective,
bounded) minimises them with the `soft_l1` loss, which stops one bad case from pulling the
rest; the settings are scaled to [0, 1] within their bounds, and the Jacobian is taken by
finite differences of a fixed 2% of each setting's range (forward, or backward where that
would leave the upper bound): simulated metrics move in small steps, so a finer difference
would see noise. We compute that Jacobian ourselves rather than through scipy's `diff_step`,
which is relative to the current value and varies between scipy versions. All of it is
deterministic: the same file gives the same fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simsched.config.loading import load_scenario
from simsched.results.simulate import simulate
from simsched.studies.calibration.metrics import metric
from simsched.studies.calibration.spec import CalibrationFile, case_overrides, load_calibration
from simsched.studies.orphans import watched_pool

DIFF_STEP = 0.02  # of each setting's range (the scaled unit)
TOLERANCE = 1e-3  # stop when a step improves the cost or moves the settings by less than 0.1%
MISSING = 10.0  # the residual of a case with no served request: far off, but finite


@dataclass
class Calibration:
    spec: CalibrationFile
    measured: list[float]
    before: list[float]
    after: list[float]
    fitted: list[float]  # one per setting, in file order
    fit: bool = True  # False: `fitted` and `after` are the settings' start values, unfitted


def run_case(job: tuple[str, tuple[str, ...], str]) -> float:
    """A case's simulated metric: (scenario path, overrides, metric) -> value."""
    path, overrides, name = job
    result = simulate(load_scenario(Path(path), list(overrides)))
    frame = result.requests  # the first variant is compared (calibration scenarios have one)
    return metric(frame[frame["variant"] == result.variants[0]], name)


class Evaluator:
    """Every case simulated with given setting values, cached, in parallel over `jobs`."""

    def __init__(
        self, path: Path, spec: CalibrationFile, jobs: int, progress: Callable | None = None
    ) -> None:
        self.base = path.parent
        self.progress = progress
        self.spec = spec
        # each worker ends itself if this process dies without stopping it (SIGKILL)
        self.pool = watched_pool(jobs) if jobs > 1 else None
        self.cache: dict[tuple[float, ...], list[float]] = {}

    def jobs(self, values: tuple[float, ...] | None) -> list[tuple[str, tuple[str, ...], str]]:
        out = []
        for case in self.spec.cases:
            path = self.base / case.scenario
            sets = case_overrides(self.spec, case, path, None if values is None else list(values))
            out.append((str(path), tuple(sets), case.metric))
        return out

    def __call__(self, values: tuple[float, ...] | None) -> list[float]:
        key = values if values is not None else ()
        if key not in self.cache:
            jobs = self.jobs(values)
            runs = self.pool.map(run_case, jobs) if self.pool else map(run_case, jobs)
            self.cache[key] = list(runs)
            if self.progress is not None:
                self.progress(len(self.cache), values, self.cache[key])
        return self.cache[key]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def calibrate(
    path: Path,
    jobs: int = 1,
    fit: bool = True,
    progress: Callable | None = None,
    overrides: list[str] | None = None,
) -> Calibration:
    """Fit the file's settings; `progress(n, values, simulated)` after each new evaluation.
    `overrides` are `--set PATH=VALUE` texts for every case (docs/calibration.md)."""
    # every case checked before any runs, with the flags
    spec, measured, _ = load_calibration(path, overrides)
    evaluate = Evaluator(path, spec, jobs, progress)
    try:
        before = evaluate(None)
        low = np.array([s.low for s in spec.settings])
        span = np.array([s.high for s in spec.settings]) - low
        target = np.log(np.array(measured))

        def values(x: np.ndarray) -> tuple[float, ...]:
            return tuple(float(f"{v:.6g}") for v in low + span * x)  # printable and cacheable

        def residuals(x: np.ndarray) -> np.ndarray:
            sim = np.array(evaluate(values(x)))
            ok = np.isfinite(sim) & (sim > 0)
            return np.where(ok, np.log(np.where(ok, sim, 1.0)) - target, MISSING)

        def jacobian(x: np.ndarray) -> np.ndarray:
            return finite_jacobian(residuals, x)

        x0 = np.clip((np.array([s.initial for s in spec.settings]) - low) / span, 0.0, 1.0)
        if fit:
            # scipy.optimize only here, where the fit runs: the pool workers that simulate the
            # cases and a `--no-fit` run never use it, and importing it costs most of a second
            from scipy.optimize import least_squares

            found = least_squares(
                residuals,
                x0,
                bounds=(0.0, 1.0),
                loss="soft_l1",
                f_scale=0.1,
                jac=jacobian,
                max_nfev=spec.max_iterations,
                method="trf",
                ftol=TOLERANCE,
                xtol=TOLERANCE,
            ).x
        else:
            found = x0
        fitted = list(values(found))
        after = evaluate(tuple(fitted))
    finally:
        evaluate.close()
    return Calibration(spec, measured, before, after, fitted, fit)


def finite_jacobian(residuals: Callable, x: np.ndarray, step: float = DIFF_STEP) -> np.ndarray:
    """d residuals / d x by differences of `step` in scaled units, backward near the top."""
    base = residuals(x)
    columns = []
    for i in range(len(x)):
        h = step if x[i] + step <= 1.0 else -step  # stay within the bounds [0, 1]
        moved = x.copy()
        moved[i] += h
        columns.append((residuals(moved) - base) / h)
    return np.column_stack(columns)


def error(simulated: float, measured: float) -> float:
    """Signed relative error, simulated against measured."""
    return simulated / measured - 1.0 if math.isfinite(simulated) else math.inf


def summary(errors: list[float]) -> tuple[float, float]:
    """Median and worst absolute error."""
    absolute = [abs(e) for e in errors]
    return float(np.median(absolute)), max(absolute)
