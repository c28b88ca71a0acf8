"""Ctrl-C while the command is still starting: exit 130 in silence, not a traceback.

Importing typer and building the command takes most of a second, and more on a loaded machine.
A Ctrl-C (or a script's SIGINT) in that window used to print a KeyboardInterrupt traceback from
deep inside an import. Nothing has been read or written yet, so there is nothing to clean up:
until `main` takes over, SIGINT ends the process at once with the status a shell gives Ctrl-C
(128 + SIGINT). Only when SIGINT would raise KeyboardInterrupt (not when the caller ignores it,
as a background job does) and only on the main thread, where handlers can be set.
"""

from __future__ import annotations

import os
import signal
import threading

INTERRUPTED = 128 + signal.SIGINT


def exit_quietly(signum: int, frame: object) -> None:
    os._exit(INTERRUPTED)  # nothing to flush or remove: the command has not started


def hold_interrupts() -> None:
    """Until `release_interrupts`, SIGINT ends the process without a traceback."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, exit_quietly)


def release_interrupts() -> None:
    """SIGINT raises KeyboardInterrupt again, as `main` expects (and any importer of the CLI)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is exit_quietly:
        signal.signal(signal.SIGINT, signal.default_int_handler)
