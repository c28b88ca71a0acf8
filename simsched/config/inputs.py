"""The files a scenario reads: the scenario file itself and every trace or config it names.

Outputs are checked against these before a run (`outputs.preflight`, by the one rule of
`outputs.atomic.refuse_overwriting_inputs`), so that no output can overwrite what the run reads:
`simsched workload s.yaml --out t.csv` where `s.yaml` draws from `t.csv`, a results folder whose
`requests.csv` is the scenario's own trace, or a `summary.json` that is the model's `hf_config`.
A calibration adds its own files (`studies.calibration.spec.calibration_inputs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simsched.config.loading import resolve_variants
from simsched.config.scenario import Scenario


def scenario_inputs(scenario: Scenario, file: str | Path | None = None) -> list[Path]:
    """`file` and every path the scenario (its variants too) reads, each once, in order."""
    found = [Path(file)] if file is not None else []
    found += _named_paths(scenario.model_dump(mode="python"))
    for _, resolved in resolve_variants(scenario, str(file or scenario.name)):
        # a model read from a config.json keeps its path off the dump (it is not a setting)
        source = getattr(getattr(resolved.cluster, "model", None), "hf_config", None)
        if source:
            found.append(Path(source))
    return list(dict.fromkeys(found))


def _named_paths(root: Any) -> list[Path]:
    """Every path under a `path:` or `hf_config:` key (or a dotted override of one)."""
    found: list[Path] = []
    stack: list[Any] = [root]
    while stack:  # iterative: a scenario's depth is bounded, but the walk need not rely on it
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if _is_path_key(key) and isinstance(value, str) and value:
                    found.append(Path(value))
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return found


def grid_inputs(axes: dict[str, list], file: str | Path) -> list[Path]:
    """Paths a sweep's grid sets (`--grid trace.path=a.csv,b.csv`), relative to the scenario
    file as `--set` paths are: inputs of its points."""
    base = Path(file).parent
    named: list[Path] = []
    for key, values in axes.items():
        for value in values:
            if _is_path_key(key) and isinstance(value, str) and value:
                named.append(Path(value))
            else:  # a mapping value: `--grid cluster.model={hf_config: x.json}`
                named += _named_paths({"value": value})
    return [base / path for path in named]


def _is_path_key(key: Any) -> bool:
    # as `loading._resolve_paths`: `path:` in a mapping, a dotted `x.path` override, hf_config
    return isinstance(key, str) and (
        key in ("path", "hf_config") or key.endswith((".path", ".hf_config"))
    )
