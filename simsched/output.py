"""Writing a result to a folder, all or nothing.

Files go to a temporary folder beside the target and are moved into place only once every one
of them is written, so a failed or interrupted run never leaves a half-written output.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from simsched.errors import InputError
from simsched.results import SimulationResult

REQUESTS_FILE = "requests.csv"
TENANTS_FILE = "tenants.csv"
SUMMARY_FILE = "summary.json"
TIMELINE_FILE = "timeline.csv"


def write_result(result: SimulationResult, out_dir: str | Path) -> list[Path]:
    """Write the result files into `out_dir` (created if needed); the written paths, sorted."""
    target = Path(out_dir)
    if target.exists() and not target.is_dir():
        raise InputError(str(target), "--out", "exists and is not a folder")
    try:
        staging = _staging_folder(target)
        try:
            _write_files(result, staging)
            return _move_into_place(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except OSError as exc:  # no permission, disk full, a read-only place: the user's to fix
        raise InputError(str(target), "--out", f"cannot write: {exc.strerror or exc}") from None


def _staging_folder(target: Path) -> Path:
    """An empty folder beside `target`, on the same file system so that moves are renames."""
    parent = target.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=parent))
    # mkdtemp makes a private (0700) folder; a new output folder gets the usual permissions
    staging.chmod(0o777 & ~_umask())
    return staging


def _umask() -> int:
    mask = os.umask(0o022)  # the only way to read it is to set it, then restore it at once
    os.umask(mask)
    return mask


def _write_files(result: SimulationResult, folder: Path) -> None:
    requests = result.requests.copy()
    for column in ("dispatch_ms", "first_token_ms", "finish_ms"):
        requests[column] = requests[column].round(4)
    requests.to_csv(folder / REQUESTS_FILE, index=False, lineterminator="\n")
    result.tenants.to_csv(folder / TENANTS_FILE, index=False, lineterminator="\n")
    timeline = result.timeline.copy()
    timeline["time_ms"] = timeline["time_ms"].round(4)
    timeline.to_csv(folder / TIMELINE_FILE, index=False, lineterminator="\n")
    with open(folder / SUMMARY_FILE, "w", encoding="utf-8") as f:
        json.dump(result.to_json_dict(), f, indent=2)
        f.write("\n")


def _move_into_place(staging: Path, target: Path) -> list[Path]:
    if not target.exists():
        os.replace(staging, target)
        return sorted(target.iterdir())
    written = []
    for item in sorted(staging.iterdir()):
        os.replace(item, target / item.name)
        written.append(target / item.name)
    return written
