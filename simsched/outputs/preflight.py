"""Checking, before a run, that its outputs can be written where the user asked.

A run may take hours; an `--out` that cannot be written (a read-only place, a folder under a
file, a name longer than the file system takes) must be found at the start, not when the
results are ready. Each check makes and removes a temporary in the place the output will be
staged, which answers for permissions, read-only mounts and quotas alike.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from simsched.errors import InputError
from simsched.outputs.atomic import cannot_write, output_folder, refuse_overwriting_inputs

NAME_MAX = 255  # bytes in one path component on every common file system


def check_output_folder(
    target: str | Path, flag: str, names: Iterable[str] = (), inputs: Iterable[Path] = ()
) -> Path:
    """`target` can become (or be refilled as) a results folder holding `names`, none of which
    is one of the run's `inputs`."""
    _check_names(Path(target), flag)  # first: a name too long makes even exists() fail
    inputs = list(inputs)  # walked once per name
    path = output_folder(target, flag)
    _probe(_nearest_folder(path.absolute().parent), path, flag)
    if path.is_dir():
        _probe(path, path, flag)
        for name in names:  # a file we would replace is now a folder: refuse, replace nothing
            item = path / name
            if item.is_dir():
                raise InputError(str(item), flag, "is a folder, not a file: nothing written")
            if os.path.lexists(item) and not item.is_symlink() and not item.is_file():
                raise InputError(str(item), flag, "is not a regular file: nothing written")
            _not_an_input(item, flag, inputs)
    return path


def _not_an_input(path: Path, flag: str, inputs: Iterable[Path]) -> None:
    refuse_overwriting_inputs([path], inputs, flag)  # the one rule (outputs.atomic)


def check_output_file(path: str | Path, flag: str, inputs: Iterable[Path] = ()) -> Path:
    """`path` can be written as a file, and is none of the run's `inputs`."""
    path = Path(path)
    _check_names(path, flag)
    if path.is_dir():
        raise InputError(str(path), flag, "is a folder, not a file")
    if os.path.lexists(path) and not path.is_symlink() and not path.is_file():
        # a device or FIFO: the output's final rename would replace the node itself
        raise InputError(str(path), flag, "is not a regular file (a device, FIFO or socket)")
    _not_an_input(path, flag, inputs)
    parent = path.absolute().parent
    for folder in (parent, *parent.parents):
        if folder.exists():
            if not folder.is_dir():
                raise InputError(str(path), flag, f"{folder} is a file, not a folder")
            break
    _probe(_nearest_folder(parent), path, flag)
    return path


def _check_names(path: Path, flag: str) -> None:
    for part in path.absolute().parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise InputError(
                str(path)[:80] + "...", flag, f"a name in the path is longer than {NAME_MAX} bytes"
            )


def _nearest_folder(path: Path) -> Path:
    for folder in (path, *path.parents):
        if folder.exists():
            return folder
    return Path(path.anchor)


def _probe(folder: Path, target: Path, flag: str) -> None:
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".simsched-check-", dir=folder))
    except OSError as exc:
        raise cannot_write(target, flag, exc) from None
