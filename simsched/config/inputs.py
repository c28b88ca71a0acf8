"""The files a scenario reads: the scenario file itself and every trace or config it names.

Outputs are checked against these before a run (`outputs.preflight`), so that no `--out` can
overwrite what the run reads: `simsched workload s.yaml --out t.csv` where `s.yaml` draws from
`t.csv`, or a results folder whose `requests.csv` is the scenario's own trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simsched.config.scenario import Scenario


def scenario_inputs(scenario: Scenario, file: str | Path | None = None) -> list[Path]:
    """`file` and every path the scenario (its variants too) reads, each once, in order."""
    found = [Path(file)] if file is not None else []
    stack: list[Any] = [scenario.model_dump(mode="python")]
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
    return list(dict.fromkeys(found))


def grid_inputs(axes: dict[str, list], file: str | Path) -> list[Path]:
    """Paths a sweep's grid sets (`--grid trace.path=a.csv,b.csv`), relative to the scenario
    file as `--set` paths are: inputs of its points."""
    base = Path(file).parent
    return [
        base / value
        for key, values in axes.items()
        if _is_path_key(key)
        for value in values
        if isinstance(value, str) and value
    ]


def _is_path_key(key: Any) -> bool:
    # as `loading._resolve_paths`: `path:` in a mapping, a dotted `x.path` override, hf_config
    return isinstance(key, str) and (
        key in ("path", "hf_config") or key.endswith((".path", ".hf_config"))
    )
