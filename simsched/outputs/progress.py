"""A tiny progress line for long runs (sweeps, plans), on a terminal only.

It redraws one line in place (`\\r`) with a bar, the count, the elapsed time and an ETA. When the
stream is not a terminal (piped, redirected, a notebook, a test) it writes nothing at all, so
scripted runs see only their results. The wall clock is read for display only; it never reaches
a result.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

BAR_WIDTH = 24


class ProgressLine:
    """Call it with `(done, total)` after each unit of work; `close()` ends the line."""

    def __init__(
        self,
        label: str,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        enabled: bool | None = None,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self.clock = clock
        self.started = clock()
        self.width = 0  # of the last line drawn, to blank out a longer previous one

    def __call__(self, done: int, total: int) -> None:
        if self.enabled:
            self._draw(render(self.label, done, total, self.clock() - self.started))

    def message(self, text: str) -> None:
        """A line of its own (a plan's probe, say), kept above the progress line."""
        if self.enabled:
            self._draw(f"{self.label}: {text}")
            self.stream.write("\n")
            self.width = 0
            self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.width:
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0

    def _draw(self, line: str) -> None:
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)


def render(label: str, done: int, total: int, elapsed_s: float) -> str:
    """`label [#######.........]  7/20  35%  0:04 elapsed, ETA 0:07`."""
    fraction = done / total if total else 1.0
    filled = round(BAR_WIDTH * fraction)
    bar = "#" * filled + "." * (BAR_WIDTH - filled)
    eta = _clock_text(elapsed_s / done * (total - done)) if done else "?"
    return (
        f"{label} [{bar}] {done}/{total} {fraction:4.0%}  "
        f"{_clock_text(elapsed_s)} elapsed, ETA {eta}"
    )


def _clock_text(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or file-like stream without a terminal
        return False
