"""Writing outputs all or nothing: into a temporary beside the target, then moved into place.

The temporary sits in the target's own folder, so the final move is a rename on one file system:
a reader, or a run that fails halfway, sees the old output or the whole new one, never a part.
A new output gets the permissions the umask gives any new file or folder, unless the caller
asks for others (`mode`): temporaries start private (0600, 0700), outputs are not.

One rule holds for every file a command writes (`refuse_overwriting_inputs`): it is none of the
files the same run reads, compared by resolved path and by inode, so that neither a symlink nor
a hard link can hide an input behind an output's name.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from simsched.errors import InputError


def cannot_write(path: Path, where: str, exc: OSError) -> InputError:
    # no permission, disk full, a read-only place: the user's to fix, not a bug
    return InputError(str(path), where, f"cannot write: {exc.strerror or exc}")


def same_file(a: Path, b: Path) -> bool:
    """`a` and `b` name one file: the same path once links are resolved, or the same inode
    (a hard link has its own path but shares the inode)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        first, second = os.stat(a), os.stat(b)
    except (OSError, ValueError):  # one is missing (nothing to overwrite), or unnameable
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def refuse_overwriting_inputs(outputs: Iterable[Path], inputs: Iterable[Path], flag: str) -> None:
    """The one rule of every writer: no output is a file the same run reads.

    An `InputError` naming the output, the option that gave it and the input it would replace.
    """
    sources = list(inputs)
    for output in outputs:
        for source in sources:
            if same_file(output, source):
                raise InputError(
                    str(output), flag, f"is the input {source}: it would be overwritten"
                )


def output_folder(out_dir: str | Path, where: str = "--out") -> Path:
    """`out_dir` as a path; refused when it, or a folder above it, is a file."""
    target = Path(out_dir)
    if target.exists() and not target.is_dir():
        raise InputError(str(target), where, "exists and is not a folder")
    for parent in target.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(str(target), where, f"{parent} is a file, not a folder")
            break
    return target


@contextmanager
def staging_folder(target: Path, mode: int | None = None) -> Iterator[Path]:
    """An empty folder beside `target` to write the files into; removed on the way out.

    Failing to make it is an `InputError`; whatever fails inside the block is the caller's.
    """
    try:
        parent = target.resolve().parent
        parent.mkdir(parents=True, exist_ok=True)
        remove_stale_staging(parent, target.name)
        staging = Path(tempfile.mkdtemp(prefix=_staging_prefix(target.name), dir=parent))
        staging.chmod(_permissions(mode, 0o777))
    except OSError as exc:
        raise cannot_write(target, "--out", exc) from None
    try:
        yield staging
    finally:  # after a whole-folder move there is nothing left to remove
        shutil.rmtree(staging, ignore_errors=True)


def _staging_prefix(name: str) -> str:
    # the writer's process id in the name: a later write of the same target can tell a folder
    # whose writer was killed (SIGKILL runs no cleanup) from one another run is writing now
    return f".{name}-{os.getpid()}-"


def remove_stale_staging(parent: Path, name: str) -> list[Path]:
    """Remove the staging folders of target `name` in `parent` whose writer process is gone;
    the removed paths. A folder without a writer id (or whose id is alive) is left alone."""
    # mkdtemp's suffix is 8 of [a-z0-9_]: no dash, so a target named `out-12` is never `out`'s
    pattern = re.compile(rf"\.{re.escape(name)}-(\d+)-[a-z0-9_]{{8}}")
    removed = []
    for entry in parent.iterdir():
        match = pattern.fullmatch(entry.name)
        if match and entry.is_dir() and not entry.is_symlink() and _gone(int(match[1])):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def remove_stale_staging_files(parent: Path, name: str) -> list[Path]:
    """The same for the staging files of a single-file target (`.NAME.PID-XXXXXXXX.tmp`)."""
    pattern = re.compile(rf"\.{re.escape(name)}\.(\d+)-[a-z0-9_]{{8}}\.tmp")
    removed = []
    for entry in parent.iterdir():
        match = pattern.fullmatch(entry.name)
        if match and entry.is_file() and not entry.is_symlink() and _gone(int(match[1])):
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


def _gone(pid: int) -> bool:
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)  # asks, sends nothing
    except ProcessLookupError:
        return True
    except OSError:
        return False  # another user's process: not ours to judge
    return False


def publish_folder(staging: Path, target: Path) -> list[Path]:
    """Move the staged files into `target`; the written paths, sorted.

    A new `target` is the staging folder itself, renamed; an existing one keeps its other files
    and has ours replaced, all or nothing: every file we replace is first moved aside, and put
    back if any move fails, so a failure leaves the folder as it was.
    """
    if not target.exists():
        os.replace(staging, target)
        return sorted(target.iterdir())
    items = sorted(staging.iterdir())
    for item in items:
        if (target / item.name).is_dir():
            raise InputError(
                str(target / item.name), "--out", "is a folder, not a file: nothing written"
            )
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}-old-", dir=target))
    moved: list[tuple[Path, Path | None]] = []  # (placed file, the file it replaced)
    try:
        for item in items:
            dest = target / item.name
            previous = None
            if os.path.lexists(dest):
                previous = aside / item.name
                os.replace(dest, previous)
            moved.append((dest, previous))
            os.replace(item, dest)
    except BaseException:
        for dest, previous in reversed(moved):
            _restore(dest, previous)
        raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)
    return [target / item.name for item in items]


def _restore(dest: Path, previous: Path | None) -> None:
    try:
        if previous is not None:
            os.replace(previous, dest)
        else:
            dest.unlink(missing_ok=True)
    except OSError:
        pass  # best effort: the original error is the one to report


@contextmanager
def staging_file(path: Path, where: str = "", mode: int | None = None) -> Iterator[Path]:
    """A temporary file beside `path` to write; it replaces `path` if the block ends well.

    Failing to make it is an `InputError` (`where` names the option that gave `path`).
    """
    if path.is_dir():
        raise InputError(str(path), where, "is a folder, not a file")
    if os.path.lexists(path) and not path.is_symlink() and not path.is_file():
        raise InputError(str(path), where, "is not a regular file (a device, FIFO or socket)")
    try:
        # the writer's process id in the name: a later write of `path` removes what a killed
        # writer left (a SIGKILL runs no cleanup)
        remove_stale_staging_files(path.parent, path.name)
        handle, name = tempfile.mkstemp(
            prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp", dir=path.parent
        )
    except OSError as exc:
        raise cannot_write(path, where, exc) from None
    os.close(handle)
    staging = Path(name)
    try:
        yield staging
        staging.chmod(_permissions(mode, 0o666))
        os.replace(staging, path)
    finally:
        staging.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str, where: str = "--out") -> Path:
    """Write `text` (UTF-8, newlines as given) to `path`, all or nothing; the file is 0644."""
    with (
        staging_file(path, where, mode=0o644) as staging,
        open(staging, "w", encoding="utf-8", newline="") as out,
    ):
        out.write(text)
    return path


def _permissions(mode: int | None, full: int) -> int:
    return full & ~_umask() if mode is None else mode


def _umask() -> int:
    mask = os.umask(0o022)  # the only way to read it is to set it, then restore it at once
    os.umask(mask)
    return mask
