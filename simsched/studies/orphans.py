"""Worker processes that end when the process that started them is gone, however it went.

A sweep's or plan's workers are started through the forkserver, so their parent is the
forkserver, not the command; and both the forkserver and the resource tracker live as long as
some worker holds the pipes the command handed it. A command killed with SIGKILL (the
out-of-memory killer's signal) runs no cleanup, so without this its workers, the forkserver and
the tracker would run on, each holding its memory. Each worker therefore starts a daemon thread
that waits for the command to end and then ends the worker at once; the forkserver and the
tracker follow, as the last holder of their pipes is gone.

`watched_pool` builds such a pool; the sweep/plan runner and the calibration fit both use it.

Two ways to wait, picked once: a pidfd (Linux 5.3+), readable when the process ends, or, where
there is none, asking every second whether the process still exists.
"""

from __future__ import annotations

import multiprocessing
import os
import select
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

POLL_S = 1.0  # how often the polling watcher asks
EXIT_STATUS = 70  # EX_SOFTWARE: the worker did not finish, its command is gone


def watched_pool(jobs: int) -> ProcessPoolExecutor:
    """A pool of `jobs` clean workers (forkserver, or spawn where there is none), each ending
    itself once this process has ended, whether or not it stopped them."""
    return ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context(start_method()),
        initializer=watch_parent,
        initargs=(os.getpid(),),
    )


def start_method() -> str:
    # fork copies whatever threads the caller runs (a Dask client, a notebook's); forkserver
    # and spawn start clean workers
    methods = multiprocessing.get_all_start_methods()
    return "forkserver" if "forkserver" in methods else "spawn"


def watch_parent(parent_pid: int) -> None:
    """A pool initializer: end this worker when the process `parent_pid` has ended."""
    thread = threading.Thread(
        target=_end_after, args=(WAITERS[_waiter_kind()], parent_pid), daemon=True,
        name="simsched-parent-watch",
    )  # fmt: skip
    thread.start()


def _end_after(wait: Callable[[int], None], parent_pid: int) -> None:
    wait(parent_pid)
    os._exit(EXIT_STATUS)  # no cleanup to run: the results have no one to go to


def wait_with_pidfd(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # already gone
    try:
        select.select([fd], [], [])  # readable once the process has ended
    finally:
        os.close(fd)


def wait_by_polling(pid: int) -> None:
    while _exists(pid):
        time.sleep(POLL_S)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process holds the id now: ours (same user) is gone
    return True


WAITERS: dict[str, Callable[[int], None]] = {"pidfd": wait_with_pidfd, "poll": wait_by_polling}


def _waiter_kind() -> str:
    return "pidfd" if hasattr(os, "pidfd_open") else "poll"
