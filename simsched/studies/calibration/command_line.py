"""`simsched calibrate --set PATH=VALUE`: the command line's overrides, over every case.

A flag is a `scenario --set`: the same parser (`config.overrides.parse_assignment`) and, per
case, the same loading (`config.loading.load_scenario`), applied after the case's own `set`, so
the command line wins over the file. One kind of flag is different: a path the file fits (a
`settings[].path`, as written there) would be overwritten by the fit, or would overwrite it, if
it were applied as an override. It sets where that setting starts instead (its `start:`), and
reaches, as the setting's own value would, the cases no setting on that path fits. A flag that
holds a fitted path or lies inside one (`cluster.moe_serving={...}` while
`cluster.moe_serving.layer_us` is fitted) is refused: it would undo the fit.

Everything here is pure: `spec.py` reads the file and loads the cases with these overrides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simsched.config.overrides import OverrideError, parse_assignment, split_path
from simsched.errors import InputError

if TYPE_CHECKING:  # spec.py imports this module: the types only, no cycle
    from simsched.studies.calibration.spec import Setting


@dataclass(frozen=True)
class Flag:
    """One `--set PATH=VALUE` as given, and what it says."""

    text: str
    path: str
    value: Any
    segments: tuple[str, ...]

    @property
    def value_text(self) -> str:
        # the value as written, so that a path it is moved to reads it exactly as `--set` would
        return self.text.partition("=")[2]

    def at(self, path: str) -> str:
        """This flag's value set at `path` (a pool's copy of a fitted path)."""
        return f"{path}={self.value_text}"


@dataclass
class CommandLine:
    """The run's flags: the settings whose `start` they gave, and each case's overrides (after
    its own `set`; a fitted path's flag is absent where the setting's value carries it)."""

    flags: tuple[Flag, ...] = ()
    starts: frozenset[int] = frozenset()  # indices into the file's settings
    per_case: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def case_sets(self, case: str) -> tuple[str, ...]:
        return self.per_case.get(case, ())

    def plain(self, settings: list[Setting]) -> list[str]:
        """The flags that name no fitted path, in order: what every case gets as it is."""
        return [f.text for f in self.flags if not any(targets(f, s) for s in settings)]


def parse_flags(texts: list[str] | None, label: str) -> tuple[Flag, ...]:
    """Each `--set` text as a `Flag`; a malformed one (no `=`, an empty path segment) is an
    `InputError` naming it, as `scenario --set` names it."""
    flags = []
    for text in texts or []:
        try:
            path, value = parse_assignment(text)
            segments = tuple(split_path(path))
        except OverrideError as exc:
            raise InputError(label, f"--set {text}", exc.problem) from None
        if segments[:1] == ("variants",):
            # a case compares its first variant: a flag there could change what is compared
            # or write a fitted path past the fit (a variant's own `set` comes last)
            raise InputError(
                label,
                f"--set {text}",
                "a case's variants are not set from the command line; give their settings "
                "as plain --set PATH=VALUE flags",
            )
        flags.append(Flag(text, path, value, segments))
    return tuple(flags)


def segments_of(path: str) -> tuple[str, ...]:
    """A setting path's segments; () when malformed (loading the case names that setting)."""
    try:
        return tuple(split_path(path))
    except OverrideError:
        return ()


def targets(flag: Flag, setting: Setting) -> bool:
    """Whether `flag` sets `setting`'s own path (`a[0].b` and `a.0.b` alike)."""
    return flag.segments == segments_of(setting.path)


def start_value(flag: Flag, setting: Setting, index: int, label: str) -> float:
    """The flag's value as the setting's start: a finite number within its bounds, as the
    file's own `start:` must be (the fit is bounded, so a start outside would be moved in)."""
    where = f"--set {flag.text}"
    fitted = f"settings[{index}] fits {setting.path}"
    value = flag.value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(label, where, f"{fitted}: its start must be a number, not {value!r}")
    # compared as given: NaN and infinities fail, and a 400-digit integer is never made a float
    if not setting.low <= value <= setting.high:
        raise InputError(
            label,
            where,
            f"{fitted} within [{setting.low:g}, {setting.high:g}]: a start of "
            f"{flag.value_text.strip()} is outside them (widen low or high in the file)",
        )
    return float(value)
