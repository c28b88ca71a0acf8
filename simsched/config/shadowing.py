"""Settings a variant would silently undo: one check for `scenario`, `sweep` and `plan`.

Variants apply on top of the file and every `--set` (docs/scenario.md), so a `--set`, a swept
path or a plan's knob that a variant also sets would keep the variant's value in that variant,
and the command would report it as if it had changed. Every command refuses that with the same
message, naming the flag, the variant and the variant's own key; paths are compared after
resolving list elements named by id to their index (`overrides.canonical_path`).
"""

from __future__ import annotations

from simsched.config.loading import shadowing_variants
from simsched.config.overrides import OverrideError, overlapping, parse_assignment
from simsched.config.scenario import Scenario
from simsched.errors import InputError


def refuse_shadowed(
    scenario: Scenario,
    path: str,
    where: str,
    names: list[str] | None,
    label: str,
    remedy: str = "run the other variants (--variant) or take the setting out of the variant",
) -> None:
    """An `InputError` at `where` if one of the named variants (all by default) sets `path`."""
    shadowed = shadowing_variants(scenario, path, names)
    if shadowed:
        variant, key = shadowed[0]
        raise InputError(
            label,
            where,
            f"variant {variant!r} sets {key} itself, so {where.split()[0]} would not change it "
            f"there; {remedy}",
        )


def refuse_shadowed_overrides(
    scenario: Scenario, overrides: list[str] | None, names: list[str] | None, label: str
) -> None:
    """Every `--set PATH=VALUE` against the variants that will run (`names`; None for all)."""
    for text in overrides or []:
        try:
            path, _ = parse_assignment(text)
        except OverrideError:
            continue  # loading the scenario has reported it already
        refuse_shadowed(scenario, path, f"--set {text}", names, label)


def refuse_overlapping(scenario: Scenario, paths: list[tuple[str, str]], label: str) -> None:
    """Two (flag, path) pairs that name the same setting, or one inside the other, are refused:
    the later one would overwrite the earlier at every point."""
    raw = scenario.model_dump(mode="python", exclude={"variants"})
    for index, (flag, path) in enumerate(paths):
        for _, earlier in paths[:index]:
            if overlapping(path, earlier, raw):
                raise InputError(
                    label,
                    f"{flag} {path}",
                    f"{path} and {earlier} name the same setting (or one holds the other): "
                    "it is swept twice",
                )
