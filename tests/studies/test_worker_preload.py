"""The suite's pool workers start with simsched already imported: tests/conftest.py has the
forkserver preload the worker modules once per test process, instead of every worker of every
pool importing simsched, pandas and numpy again."""

from __future__ import annotations

import pytest

from simsched.studies.orphans import start_method, watched_pool

# Evaluated in the worker: `eval` is a builtin, so unpickling the call imports nothing.
IMPORTED_BEFORE_THE_TASK = (
    "all(m in __import__('sys').modules"
    " for m in ('simsched.studies.runners', 'simsched.studies.calibration.fit'))"
)


def test_a_worker_has_the_worker_modules_before_its_first_task() -> None:
    if start_method() != "forkserver":
        pytest.skip("only the forkserver preloads; spawned workers import as they start")
    pool = watched_pool(1)
    try:
        assert pool.submit(eval, IMPORTED_BEFORE_THE_TASK).result(timeout=120) is True
    finally:
        pool.shutdown(wait=True)
