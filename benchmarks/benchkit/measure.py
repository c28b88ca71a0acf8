"""Whole-process measurement: wall time, CPU time and peak memory of one command.

Each command runs under a small measuring child whose only child is the command, so the
child's `RUSAGE_CHILDREN` is exactly the command's (worker processes it waited for included):
CPU seconds (user + system) and the peak resident set of its largest process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# Runs argv[2:] in a fresh child; prints {wall_s, cpu_s, peak_rss_kib, returncode, stdout, stderr}.
MEASURE = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
run = subprocess.run(sys.argv[2:], capture_output=True, text=True, timeout=float(sys.argv[1]))
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "peak_rss_kib": usage.ru_maxrss, "returncode": run.returncode,
                  "stdout": run.stdout, "stderr": run.stderr[-2000:]}))
"""
# A run that has not finished in this time is hung, not slow: stop it rather than wait.
TIMEOUT_S = 1800.0


class CommandFailed(RuntimeError):
    """A measured command exited non-zero; the message names it and ends with its stderr."""


@dataclass(frozen=True)
class Run:
    """One measured run of a command."""

    wall_s: float
    cpu_s: float
    peak_rss_mib: float
    stdout: str = ""

    def metric(self, name: str) -> float:
        return {"wall": self.wall_s, "cpu": self.cpu_s, "rss": self.peak_rss_mib}[name]


def measure(command: list[str], timeout_s: float = TIMEOUT_S) -> Run:
    """Run `command` once, in a fresh process, and measure it."""
    probe = [sys.executable, "-c", MEASURE, str(timeout_s), *command]
    report = json.loads(subprocess.run(probe, check=True, capture_output=True, text=True).stdout)
    if report["returncode"] != 0:
        name = " ".join(Path(part).name if "/" in part else part for part in command[:3])
        raise CommandFailed(f"{name} ... exited {report['returncode']}: {report['stderr']}")
    return Run(
        wall_s=report["wall_s"],
        cpu_s=report["cpu_s"],
        peak_rss_mib=report["peak_rss_kib"] / 1024,
        stdout=report["stdout"],
    )


def best(runs: list[Run]) -> Run:
    """The best of several runs: the least time (what the code costs when the machine lets it
    run; a loaded machine only adds time), and the largest peak memory (memory does not depend
    on load, so the largest is the honest figure)."""
    return Run(
        wall_s=min(r.wall_s for r in runs),
        cpu_s=min(r.cpu_s for r in runs),
        peak_rss_mib=max(r.peak_rss_mib for r in runs),
        stdout=runs[-1].stdout,
    )


def alternate(commands: dict[str, list[str]], repeat: int, run=measure) -> dict[str, Run]:
    """Measure each command `repeat` times, taking turns (A B A B ...) so that a change in the
    machine's load during the measurement falls on every side alike; the best run of each."""
    runs: dict[str, list[Run]] = {side: [] for side in commands}
    for _ in range(repeat):
        for side, command in commands.items():
            runs[side].append(run(command))
    return {side: best(side_runs) for side, side_runs in runs.items()}
