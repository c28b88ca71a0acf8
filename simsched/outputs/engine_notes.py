"""A note under a run's table when its variants run on different engines (and under a plan whose
`--over` combinations do): what the calibration says of engine-to-engine differences
(docs/continuous_batching.md, Fidelity, area 5).

The saturated engine cases (Qwen3-32B on one H100, 1,000 ShareGPT prompts at once, EN-G7/8/9)
are the only engine figures nothing was searched on, and they get the engines' order wrong:
published, vLLM serves 1,132 output tokens/s and SGLang 814; simulated, 1,463 and 1,707. A table
that sets engines side by side would otherwise read as a validated comparison.
"""

from __future__ import annotations

from typing import Any

from simsched.config.engines import profile_defaults
from simsched.config.pools import pools_of
from simsched.config.presets import GPU_PRESETS

SATURATED_ENGINE_ERROR = "29.3%"  # median of the nine EN-G7/8/9 figures, worst 109.6% (SGLang)


def engine_notes(resolved: dict[str, Any], variants: list[str]) -> list[str]:
    engines = {variant: engine_of(resolved[variant].cluster) for variant in variants}
    if len(set(engines.values())) < 2:
        return []
    named = ", ".join(_named(variant, engine) for variant, engine in engines.items())
    notes = [
        f"engines compared ({named}): the engine profiles are checked only at low load and on "
        "TensorRT-LLM's offline runs; at saturation the published engine comparison is off by "
        f"{SATURATED_ENGINE_ERROR} (median) and ranks SGLang above vLLM where the published "
        "runs rank vLLM first, so treat differences between engines under load as unvalidated "
        "(docs/continuous_batching.md, Fidelity)"
    ]
    hidden = _hidden_batching(resolved, variants)
    if hidden:
        notes.append(
            "engines compared at the scenario's own batching limits: "
            f"{'; '.join(hidden)} (written values win over a profile's; leave "
            "max_num_batched_tokens and max_num_seqs out to compare each engine at its own)"
        )
    return notes


def _hidden_batching(resolved: dict[str, Any], variants: list[str]) -> list[str]:
    """Each engine whose profile's batching limits the scenario's written ones replaced: the
    profile fills them only where nothing is written, so limits that differ from the profile's
    were written (compared by value: a checked scenario states the filled ones as written)."""
    found: dict[str, str] = {}
    for variant in variants:
        for pool in pools_of(resolved[variant].cluster):
            engine, gpu = getattr(pool, "engine", None), getattr(pool, "gpu", None)
            if engine is None or getattr(gpu, "name", None) not in GPU_PRESETS:
                continue  # a renamed or custom GPU: the profile was read from what was written
            own = profile_defaults(engine, gpu)  # the spec: its memory, as the profile read it
            mine = (
                getattr(pool, "max_num_batched_tokens", None),
                getattr(pool, "max_num_seqs", None),
            )
            if "max_num_batched_tokens" not in own or None in mine:
                continue  # SGLang and vLLM 0.6 keep simsched's own limits
            theirs = (own["max_num_batched_tokens"], own["max_num_seqs"])
            if mine != theirs:
                found.setdefault(
                    _name(engine),
                    f"{_name(engine)} runs {mine[0]} tokens and {mine[1]} sequences, not its "
                    f"profile's {theirs[0]} / {theirs[1]}",
                )
    return list(found.values())


def _named(label: str, engine: str) -> str:
    """A variant and its engine; a label that already says the engine (a plan's combination
    `cluster.engine=sglang`, a variant named `sglang`) alone."""
    return label if label == engine or label.endswith(f"={engine}") else f"{label}: {engine}"


def engine_of(cluster: Any) -> str:
    """The engine a cluster runs (its pools' engines joined), `default` when it names none."""
    return "+".join(sorted({_name(getattr(pool, "engine", None)) for pool in pools_of(cluster)}))


def _name(engine: Any) -> str:
    if engine is None:
        return "default"  # today's generic vLLM-like replica
    return f"{engine.name} offline" if engine.offline else str(engine.name)
