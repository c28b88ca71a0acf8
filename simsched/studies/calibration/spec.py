"""The calibration file: settings to fit (dotted paths with bounds) and measured cases.

Validated like a scenario: unknown keys, bad numbers and unreadable files are an `InputError`
naming the file and field. Each case's scenario is loaded with its `set` overrides here, so a
bad case fails before any simulation runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, NoReturn

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from simsched.config.inputs import scenario_inputs
from simsched.config.loading import load_scenario
from simsched.config.validation_errors import input_error
from simsched.config.yaml_io import MAX_SCENARIO_BYTES, parse_yaml_mapping, read_text
from simsched.errors import InputError
from simsched.studies.calibration.metrics import METRICS, VLLM_KEYS
from simsched.studies.calibration.paths import long_forms, per_pool

Finite = Annotated[float, Field(allow_inf_nan=False)]
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
    _warnings: list[str] = PrivateAttr(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        """What the file should change: an old key's new name."""
        return list(self._warnings)


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


def load_calibration(path: Path) -> tuple[CalibrationFile, list[float], list[Any]]:
    """The validated file, each case's measured value, and each case's base scenario."""
    label = str(path)
    # the scenario's bounds: the size before reading, then YAML nesting and aliases (yaml_io)
    raw = parse_yaml_mapping(read_text(path, "calibration file", MAX_SCENARIO_BYTES), label)
    raw, warnings = _renamed(raw, label)
    try:
        spec = CalibrationFile.model_validate(raw)
    except ValidationError as exc:
        raise input_error(exc.errors()[0], label, "") from None
    spec._warnings.extend(warnings)
    names = [case.name for case in spec.cases]
    for i, setting in enumerate(spec.settings):
        unknown = sorted(set(setting.cases or []) - set(names))
        if unknown:
            raise InputError(label, f"settings[{i}].cases", f"unknown case {unknown[0]!r}")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(label, "cases", f"case name {dup!r} is given twice")
    base = path.parent
    measured = [_measured(case, base, label, i) for i, case in enumerate(spec.cases)]
    scenarios = []
    for i, case in enumerate(spec.cases):
        scenario_path = base / case.scenario
        _check_scenario_file(scenario_path, case.scenario, label, f"cases[{i}].scenario")
        scenarios.append(_check_case(spec, i, scenario_path, label))
    return spec, measured, scenarios


def calibration_inputs(path: Path) -> list[Path]:
    """Every file a calibration reads: the file, its vLLM result files, each case's scenario
    and what that scenario reads (traces, hf_config files; `config.inputs`), each once.

    Outputs (`calibrate --out`) are checked against these before the fit runs."""
    spec, _, scenarios = load_calibration(path)
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
    spec: CalibrationFile, case: Case, scenario: Path, values: list[float | None] | None
) -> list[str]:
    """A case's `--set` list: short-form sections made long, the settings (those with a
    value; none when `values` is None), then the case's own."""
    settings = [(s, v) for s, v in zip(spec.settings, values or [], strict=False) if v is not None]
    setting_paths = [
        p for s in spec.settings if applies(s, case.name) for p in per_pool(scenario, s.path)
    ]
    paths = setting_paths + [item.split("=", 1)[0] for item in case.set]
    out = long_forms(scenario, paths)
    out += [
        f"{path}={v!r}"
        for s, v in settings
        if applies(s, case.name)
        for path in per_pool(scenario, s.path)
    ]
    return out + list(case.set)  # a case's own settings win (e.g. an engine without a server)


def _check_case(spec: CalibrationFile, i: int, scenario: Path, label: str) -> Any:
    """The case loaded at the settings' starts; each setting also at its low and its high,
    so that a bound outside the field's range fails now, not mid-fit."""
    case = spec.cases[i]
    try:  # without the settings first: the message names the case, then the scenario
        load_scenario(scenario, case_overrides(spec, case, scenario, None))
    except InputError as exc:
        field = "set" if "--set" in str(exc) else "scenario"
        raise InputError(label, f"cases[{i}].{field}", str(exc)) from None
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
