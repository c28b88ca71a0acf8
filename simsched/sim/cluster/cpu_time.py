"""How the CPU's per-iteration time adds to the GPU's: the CPU-time seam of an engine profile.

The roofline charges the CPU `overhead_ms + per_seq_ms * decode_seqs` per iteration (schedule,
prepare inputs, sample). Engines differ in whether the GPU waits for it (docs/engines.md):

    serial      iteration = gpu + cpu              (vLLM; the roofline as it is)
    multi_step  iteration = gpu + cpu / k          (vLLM 0.6, --num-scheduler-steps k: the
                                                    scheduler and input preparation run once
                                                    for k steps, so each step pays 1/k)
    overlap     iteration = max(gpu, cpu) + x      (SGLang's and TensorRT-LLM's overlap
                                                    schedulers prepare batch i+1 while the GPU
                                                    runs batch i; x = overlap_exposed_ms, the
                                                    per-step work the overlap cannot hide)

`gpu` is the roofline with its CPU terms set to 0 (built through `build_latency`, so every GPU
term, overrides included, is the roofline's own). The linear model has no CPU term: it runs as
given. Both `iteration_ms` paths (one iteration with `max`, a decode run with `np.maximum`)
evaluate the same operations in the same order, as the fast-forward requires.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simsched.sim.cluster.latency import Latency, build_latency


class CpuShared:
    """A roofline whose CPU time is amortised over `steps` iterations or overlapped with the GPU."""

    def __init__(
        self,
        gpu: Latency,
        overhead_ms: float,
        per_seq_ms: float,
        mode: str,
        steps: int,
        exposed_ms: float = 0.0,
    ) -> None:
        self.gpu = gpu
        self.exposed_ms = exposed_ms
        self.overhead_ms = overhead_ms
        self.per_seq_ms = per_seq_ms
        self.overlap = mode == "overlap"
        self.steps = steps if mode == "multi_step" else 1
        self.before_ms = gpu.before_ms
        self.after_ms = gpu.after_ms

    def cpu_ms(self, decode_seqs: int) -> float:
        return self.overhead_ms + self.per_seq_ms * decode_seqs

    def iteration_ms(
        self,
        prefill_tokens: int,
        prefill_pairs: int,
        prefill_context: int,
        decode_seqs: int,
        decode_context: Any,
        maximum: Callable = max,
    ) -> Any:
        gpu = self.gpu.iteration_ms(
            prefill_tokens, prefill_pairs, prefill_context, decode_seqs, decode_context, maximum
        )
        cpu = self.cpu_ms(decode_seqs)
        if self.overlap:
            return maximum(gpu, cpu) + self.exposed_ms
        return gpu + cpu / self.steps


def build_engine_latency(config: Any) -> Latency | CpuShared:
    """The cluster's latency model with its `cpu_time` applied (serial or unset: unchanged)."""
    latency = build_latency(config)
    mode = getattr(config, "cpu_time", None)
    roofline = config.gpu_latency_model  # with the running GPU's overrides
    if mode in (None, "serial") or roofline.kind != "roofline":
        return latency
    no_cpu = roofline.model_copy(update={"overhead_ms": 0.0, "per_seq_ms": 0.0})
    gpu_only = config.model_copy(update={"latency_model": no_cpu, "gpu_overrides": {}})
    return CpuShared(
        build_latency(gpu_only),
        roofline.overhead_ms,
        roofline.per_seq_ms,
        mode,
        config.num_scheduler_steps,
        getattr(config, "overlap_exposed_ms", None) or 0.0,
    )
