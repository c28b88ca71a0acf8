"""The calibration file: settings to fit (dotted paths with bounds) and measured cases.

Validated like a scenario: unknown keys, bad numbers and unreadable files are an `InputError`
naming the file and field. Each case's scenario is loaded with its `set` overrides here, and
with the command line's `--set` flags (command_line.py), so a bad case or flag fails before any
simulation runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, NoReturn

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from simsched.config.inputs import scenario_inputs
from simsched.config.loading import load_scenario
from simsched.config.overrides import overlapping
from simsched.config.shadowing import refuse_shadowed
from simsched.config.validation_errors import input_error
from simsched.config.yaml_io import MAX_SCENARIO_BYTES, parse_yaml_mapping, read_text
from simsched.errors import InputError
from simsched.studies.calibration.areas import SHAPE, Area, Target, area_of_cases
from simsched.studies.calibration.command_line import (
    CommandLine,
    Flag,
    parse_flags,
    segments_of,
    start_value,
    targets,
)
from simsched.studies.calibration.metrics import METRICS, VLLM_KEYS
from simsched.studies.calibration.paths import long_forms, per_pool

Finite = Annotated[float, Field(allow_inf_nan=False)]
NonEmpty = Annotated[str, Field(min_length=1)]
# A `vllm bench serve --save-result` JSON is a few KiB (per-request lists make it larger).
MAX_VLLM_RESULT_BYTES = 64 * 1024**2


class Model(BaseModel):
    # strict, as the scenario models are: `low: true` or `measured: "40"` is a mistake, not a
    # number to coerce
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Setting(Model):
    """A numeric setting to fit, within [low, high], starting at `start` (default: the middle)."""

    path: Annotated[str, Field(min_length=1)]
    name: str = ""  # what it stands for, e.g. the preset field it becomes
    low: Finite
    high: Finite
    start: Finite | None = None
    cases: list[str] | None = None  # the cases it applies to; all when unset

    @model_validator(mode="after")
    def _ordered(self) -> Setting:
        if not self.low < self.high:
            raise ValueError(f"low ({self.low:g}) must be below high ({self.high:g})")
        if self.start is not None and not self.low <= self.start <= self.high:
            raise ValueError(f"start {self.start:g} is outside [{self.low:g}, {self.high:g}]")
        return self

    @property
    def initial(self) -> float:
        return self.start if self.start is not None else (self.low + self.high) / 2


class Case(Model):
    """A scenario (relative to the calibration file), overrides, a metric, the measured value."""

    name: Annotated[str, Field(min_length=1)]
    scenario: Annotated[str, Field(min_length=1)]
    set: list[str] = Field(default_factory=list)
    metric: str
    measured: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    vllm_result: str | None = None  # a `vllm bench serve --save-result` JSON file
    source: str = ""

    @model_validator(mode="after")
    def _known_metric(self) -> Case:
        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r} (known: {', '.join(METRICS)})")
        if (self.measured is None) == (self.vllm_result is None):
            raise ValueError("give the measured value or a vllm_result file (one of them)")
        return self


class CalibrationFile(Model):
    name: str = "calibration"
    description: str = ""
    settings: Annotated[list[Setting], Field(min_length=1)]
    cases: Annotated[list[Case], Field(min_length=1)]
    max_iterations: Annotated[int, Field(gt=0)] = 60  # optimiser iterations, a cap
    # area name -> case-name globs (areas.py): errors summed up per area as well, each against
    # its target; `median_target` is the whole file's (percent)
    areas: dict[NonEmpty, Area] = Field(default_factory=dict)
    median_target: Target | None = None
    _warnings: list[str] = PrivateAttr(default_factory=list)
    _case_areas: list[str] = PrivateAttr(default_factory=list)
    _command_line: CommandLine = PrivateAttr(default_factory=CommandLine)

    @property
    def warnings(self) -> list[str]:
        """What the file should change: an old key's new name."""
        return list(self._warnings)

    @field_validator("areas", mode="before")
    @classmethod
    def _areas_mapping(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(
                f'a mapping of area name to its cases ({SHAPE}), e.g. dense: ["trt_*"]'
            )
        return value

    @property
    def case_areas(self) -> list[str]:
        """Each case's area (areas.py), in case order; empty when the file has no areas."""
        return list(self._case_areas)

    @property
    def command_line(self) -> CommandLine:
        """The run's `--set` flags and what each case gets of them (none unless given)."""
        return self._command_line


# Keys renamed since: the old name is accepted (with a warning), never both.
RENAMED = {
    "max_evaluations": (
        "max_iterations",
        "it counts the optimiser's iterations, each of which evaluates every case",
    )
}


def _renamed(raw: dict[str, Any], label: str) -> tuple[dict[str, Any], list[str]]:
    """The mapping with old keys under their new names, and a warning per old key."""
    raw, warnings = dict(raw), []
    for old, (new, why) in RENAMED.items():
        if old not in raw:
            continue
        if new in raw:
            raise InputError(label, old, f"give {new} only ({old} is its old name)")
        raw[new] = raw.pop(old)
        warnings.append(f"{label}: {old} is now {new} ({why}); rename it")
    return raw, warnings


def load_calibration(
    path: Path, overrides: list[str] | None = None
) -> tuple[CalibrationFile, list[float], list[Any]]:
    """The validated file, each case's measured value, and each case's base scenario; with
    `overrides` (`--set PATH=VALUE` texts) applied to every case after its own `set`."""
    label = str(path)
    # the scenario's bounds: the size before reading, then YAML nesting and aliases (yaml_io)
    raw = parse_yaml_mapping(read_text(path, "calibration file", MAX_SCENARIO_BYTES), label)
    raw, warnings = _renamed(raw, label)
    try:
        spec = CalibrationFile.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise input_error(error, label, "", CalibrationFile, "calibration file") from None
    spec._warnings.extend(warnings)
    names = [case.name for case in spec.cases]
    for i, setting in enumerate(spec.settings):
        unknown = sorted(set(setting.cases or []) - set(names))
        if unknown:
            raise InputError(label, f"settings[{i}].cases", f"unknown case {unknown[0]!r}")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(label, "cases", f"case name {dup!r} is given twice")
    _refuse_shared_paths(spec.settings, names, label)
    if spec.areas:
        spec._case_areas = area_of_cases(spec.areas, names, label)
    spec = _with_flags(spec, parse_flags(overrides, label), label)
    base = path.parent
    measured = [_measured(case, base, label, i) for i, case in enumerate(spec.cases)]
    scenarios = []
    for i, case in enumerate(spec.cases):
        scenario_path = base / case.scenario
        _check_scenario_file(scenario_path, case.scenario, label, f"cases[{i}].scenario")
        scenarios.append(_check_case(spec, i, scenario_path, label))
    return spec, measured, scenarios


def calibration_inputs(path: Path, overrides: list[str] | None = None) -> list[Path]:
    """Every file a calibration reads: the file, its vLLM result files, each case's scenario
    and what that scenario reads (traces, hf_config files; `config.inputs`; a `--set` may name
    another), each once.

    Outputs (`calibrate --out`) are checked against these before the fit runs."""
    spec, _, scenarios = load_calibration(path, overrides)
    base = path.parent
    found = [path]
    for case, loaded in zip(spec.cases, scenarios, strict=True):
        if case.vllm_result is not None:
            found.append(base / case.vllm_result)
        found += scenario_inputs(loaded, base / case.scenario)
    return list(dict.fromkeys(found))


def _check_scenario_file(scenario: Path, shown: str, label: str, where: str) -> None:
    try:
        exists = scenario.is_file()
    except OSError as exc:  # a name longer than the file system takes, say
        raise InputError(label, where, f"cannot read: {exc.strerror or exc}") from None
    if not exists:
        raise InputError(label, where, f"no such file: {shown}")


def case_overrides(
    spec: CalibrationFile,
    case: Case,
    scenario: Path,
    values: list[float | None] | None,
    flags: tuple[str, ...] | None = None,
) -> list[str]:
    """A case's `--set` list: short-form sections made long, the settings (those with a
    value; none when `values` is None), the case's own, then the command line's (`flags`;
    by default what `spec.command_line` gives this case)."""
    if flags is None:
        flags = spec.command_line.case_sets(case.name)
    settings = [(s, v) for s, v in zip(spec.settings, values or [], strict=False) if v is not None]
    setting_paths = [
        p for s in spec.settings if applies(s, case.name) for p in per_pool(scenario, s.path)
    ]
    paths = setting_paths + [item.split("=", 1)[0] for item in [*case.set, *flags]]
    out = long_forms(scenario, paths)
    out += [
        f"{path}={v!r}"
        for s, v in settings
        if applies(s, case.name)
        for path in per_pool(scenario, s.path)
    ]
    # a case's own settings win (e.g. an engine without a server), and the command line wins
    # over the file
    return out + list(case.set) + list(flags)


def _check_case(spec: CalibrationFile, i: int, scenario: Path, label: str) -> Any:
    """The case loaded at the settings' starts; each setting also at its low and its high,
    so that a bound outside the field's range fails now, not mid-fit."""
    case = spec.cases[i]
    try:  # as the file has it first (no settings, no flags): the message names the case
        bare = load_scenario(scenario, case_overrides(spec, case, scenario, None, flags=()))
    except InputError as exc:
        field = "set" if "--set" in str(exc) else "scenario"
        raise InputError(label, f"cases[{i}].{field}", str(exc)) from None
    if spec.command_line.flags:  # then with the command line's, which name the flag
        _apply_flags(spec, i, scenario, bare, label)
    loaded = None
    for field in ("path", "low", "high"):  # path: at the starts, which lie within the bounds
        attr = "initial" if field == "path" else field
        values = [getattr(s, attr) for s in spec.settings]
        try:
            scenario_at = load_scenario(scenario, case_overrides(spec, case, scenario, values))
        except InputError:
            _blame_setting(spec, i, scenario, label, field)
        if field == "path":
            loaded = scenario_at
    return loaded


def _with_flags(spec: CalibrationFile, flags: tuple[Flag, ...], label: str) -> CalibrationFile:
    """`spec` with the command line's flags: a flag on a fitted path becomes the start of every
    setting on that path (the last such flag wins, as the last `--set` does)."""
    if not flags:
        return spec
    settings, starts = list(spec.settings), set()
    for flag in flags:
        for j, setting in enumerate(spec.settings):
            if targets(flag, setting):
                start = start_value(flag, setting, j, label)
                settings[j] = settings[j].model_copy(update={"start": start})
                starts.add(j)
    out = spec.model_copy(update={"settings": settings})  # the warnings come along
    out._command_line = CommandLine(flags, frozenset(starts))
    return out


def _apply_flags(spec: CalibrationFile, i: int, scenario: Path, bare: Any, label: str) -> None:
    """Work out what case `i` gets of the flags and load it with them (`bare`: the case as
    the file has it). A fitted path's flag is left to the setting where one reaches the case;
    elsewhere it is set as the setting would be (on every pool of a pooled cluster)."""
    case = spec.cases[i]
    raw = bare.model_dump(mode="python", exclude={"variants"})  # to compare paths by position
    reached = [(j, s) for j, s in enumerate(spec.settings) if _reaches(s, case, scenario, raw)]
    pairs: list[tuple[str, Flag]] = []  # (the override the case gets, the flag it comes from)
    for flag in spec.command_line.flags:
        if any(targets(flag, s) for _, s in reached):
            continue  # the setting's value carries it: the start, or what the fit makes of it
        fitted = any(targets(flag, s) for s in spec.settings)
        paths = per_pool(scenario, flag.path) if fitted else [flag.path]
        for path in paths:
            _refuse_undoing(flag, path, reached, scenario, raw, case.name, label)
            pairs.append((flag.at(path) if fitted else flag.text, flag))
    spec.command_line.per_case[case.name] = tuple(text for text, _ in pairs)
    try:
        loaded = load_scenario(scenario, case_overrides(spec, case, scenario, None))
    except InputError:
        _blame_flag(spec, i, scenario, pairs, label)
    _refuse_shadowed_flags(loaded, pairs, case.name, scenario, label)


def _reaches(setting: Setting, case: Case, scenario: Path, raw: Any) -> bool:
    """Whether the setting's value reaches the case: it applies there, and the case's own
    `set` does not overwrite it."""
    if not applies(setting, case.name) or not segments_of(setting.path):
        return False
    own = [item.split("=", 1)[0] for item in case.set]
    paths = per_pool(scenario, setting.path)
    return not any(overlapping(mine, path, raw) for mine in own for path in paths)


def _refuse_undoing(
    flag: Flag,
    path: str,
    reached: list[tuple[int, Setting]],
    scenario: Path,
    raw: Any,
    case: str,
    label: str,
) -> None:
    """A flag that holds a path the fit sets in this case, or lies inside it, would overwrite
    the fitted value at every evaluation: refused, naming the setting."""
    for j, setting in reached:
        for fitted in per_pool(scenario, setting.path):
            if overlapping(path, fitted, raw):
                raise InputError(
                    label,
                    f"--set {flag.text}",
                    f"case {case!r}: it would overwrite settings[{j}], which fits {fitted} "
                    f"there; --set {setting.path}=VALUE sets where that fit starts",
                )


def _blame_flag(
    spec: CalibrationFile, i: int, scenario: Path, pairs: list[tuple[str, Flag]], label: str
) -> NoReturn:
    """Raise naming the first flag after which case `i` fails to load, with the scenario's
    own message (as `scenario --set` gives it, without repeating the flag)."""
    case = spec.cases[i]
    for count in range(1, len(pairs) + 1):
        text, flag = pairs[count - 1]
        overrides = case_overrides(spec, case, scenario, None, tuple(t for t, _ in pairs[:count]))
        try:
            load_scenario(scenario, overrides)
        except InputError as exc:
            hint = _pool_hint(flag, scenario) if text == flag.text else ""  # not a pool's copy
            shown = f"{_without_override(exc, overrides)}{hint}"
            raise InputError(label, f"--set {flag.text}", f"case {case.name!r}: {shown}") from None
    raise InputError(label, "--set", f"case {case.name!r} fails with the flags together")


def _without_override(exc: InputError, overrides: list[str]) -> str:
    """The scenario's message without the `--set TEXT` it names (the flag, or the section's
    long form made for it), since the caller names the flag."""
    for text in overrides:
        flag = f"--set {text}"
        if exc.where == flag or exc.where.startswith(flag + ": "):
            return str(InputError(exc.source, exc.where[len(flag) + 2 :], exc.message))
    return str(exc)


def _pool_hint(flag: Flag, scenario: Path) -> str:
    """A plain `cluster.X` flag on a pooled case: `X` is each pool's own there (a calibration
    setting's `cluster.X` reaches every pool; a flag, as `scenario --set`, one place)."""
    pools = per_pool(scenario, flag.path)
    if pools == [flag.path]:
        return ""
    return f" (the case's cluster is split into pools: set a pool's own, as --set {pools[0]})"


def _refuse_shadowed_flags(
    loaded: Any, pairs: list[tuple[str, Flag]], case: str, scenario: Path, label: str
) -> None:
    """A flag the compared variant (a case's first) sets itself would not change the case: the
    same refusal as `scenario --set` gives, naming the case."""
    if not loaded.variants:
        return
    first = [loaded.variants[0].name]
    remedy = "a case compares its scenario's first variant: take the setting out of that variant"
    for text, flag in pairs:
        path = text.partition("=")[0].strip()
        try:
            refuse_shadowed(loaded, path, f"--set {flag.text}", first, str(scenario), remedy)
        except InputError as exc:
            raise InputError(
                label, exc.where, f"case {case!r}: {exc.source}: {exc.message}"
            ) from None


def _blame_setting(
    spec: CalibrationFile, i: int, scenario: Path, label: str, field: str
) -> NoReturn:
    """Raise naming the first setting that fails alone at its `field` (path: at its start)."""
    case = spec.cases[i]
    attr = "initial" if field == "path" else field
    for j, setting in enumerate(spec.settings):
        if not applies(setting, case.name):
            continue
        values = [getattr(s, attr) if k == j else None for k, s in enumerate(spec.settings)]
        try:
            load_scenario(scenario, case_overrides(spec, case, scenario, values))
        except InputError as exc:
            at = "" if field == "path" else f" at {getattr(setting, attr):g}"
            raise InputError(
                label, f"settings[{j}].{field}", f"case {case.name!r}{at}: {exc}"
            ) from None
    raise InputError(label, f"settings[*].{field}", f"case {case.name!r} fails at the {field}s")


def _refuse_shared_paths(settings: list[Setting], names: list[str], label: str) -> None:
    """Two settings may fit one path (one value per GPU family, say) on cases apart; on a case
    they share, the later would replace the earlier's value without a word, and the fit would
    move a value that reaches nothing there."""
    for j, later in enumerate(settings):
        for i, earlier in enumerate(settings[:j]):
            if not overlapping(earlier.path, later.path):
                continue
            shared = next((n for n in names if applies(earlier, n) and applies(later, n)), None)
            if shared is not None:
                raise InputError(
                    label,
                    f"settings[{j}].cases",
                    f"settings[{i}] and settings[{j}] both set {later.path} on case {shared!r}, "
                    "where the later would replace the earlier's value; give each its own cases",
                )


def applies(setting: Setting, case: str) -> bool:
    return setting.cases is None or case in setting.cases


def _measured(case: Case, base: Path, label: str, index: int) -> float:
    if case.measured is not None:
        return case.measured
    where = f"cases[{index}].vllm_result"
    file = base / str(case.vllm_result)
    try:
        data = json.loads(read_text(file, "vLLM result file", MAX_VLLM_RESULT_BYTES))
    except json.JSONDecodeError as exc:
        raise InputError(label, where, f"{case.vllm_result} is not JSON: {exc.msg}") from None
    except (RecursionError, ValueError):  # nested past the parser's depth; a huge integer
        raise InputError(label, where, f"{case.vllm_result} is not a vLLM result") from None
    key, scale = VLLM_KEYS[case.metric]
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        raise InputError(label, where, f"{case.vllm_result} has no positive {key!r}")
    # Infinity and 1e400 parse as inf (and a long integer overflows a float): a measurement is
    # finite, and the fit's residuals need it so
    try:
        measured = float(value) * scale
    except OverflowError:
        measured = math.inf
    if not math.isfinite(measured):
        shown = f"{value:g}" if isinstance(value, float) else f"{len(str(value))} digits long"
        raise InputError(
            label, where, f"{case.vllm_result}: {key} is {shown}, not a finite measurement"
        )
    return measured
