"""GPU and model presets, and the memory arithmetic of a paged KV cache (no SimPy here).

The figures are public: vendor datasheets for the GPUs, the models' `config.json` for the models
(sources in docs/continuous_batching.md); the efficiencies are fitted to published measurements
(`make calibrate`, calibration/). They are plain mappings so that `cluster_config` can validate
a preset and a user's own mapping the same way.

GPU: `tflops` dense BF16 tensor-core TFLOP/s (datasheets quote the 2:4-sparse figure, twice
this), `peak_tflops` the dense peak of other precisions, `hbm_gbps` memory bandwidth in GB/s
(10^9 bytes), `memory_gib` device memory, `gpus_per_node` the largest tensor-parallel group,
`link_gbps` the interconnect bandwidth per GPU and direction, `compute_efficiency` (per
precision) and `memory_efficiency` the shares of peak that serving kernels reach.
Model: `params`, `layers`, `hidden_size`, `kv_heads`, `head_dim`, `vocab_size`, and the weight
and KV-cache precisions (`dtype_bytes` 2 for BF16 unless `weight_dtype`/`kv_dtype` say otherwise).
"""

from __future__ import annotations

from typing import Any

from simsched.config import moe_shapes
from simsched.config.model_presets import MODEL_PRESETS as DENSE_PRESETS
from simsched.config.model_presets import from_hf_config
from simsched.config.moe_presets import MOE_PRESETS

# dense shapes (model_presets.py) and MoE ones (moe_presets.py), by name
MODEL_PRESETS = {**DENSE_PRESETS, **MOE_PRESETS}

GIB = 1024**3

# Fitted to calibration/published.yaml by `make calibrate` (calibration/fitted.yaml; the fit
# and its errors are in docs/continuous_batching.md, "Fidelity"). The H200 and H100 PCIe share
# the H100's silicon and kernels, the A100 40GB the A100 80GB's.
A100_BF16 = 0.586
A100_MEMORY = 0.699
H100_BF16 = 0.351
H100_FP8 = 0.476
H100_MEMORY = 0.785
H200_MEMORY = 0.743
B200_FP4 = 0.4
B200_MEMORY = 0.487
_A100_EFF = {"compute_efficiency": {"bf16": A100_BF16}, "memory_efficiency": A100_MEMORY}
_H100_COMPUTE = {"bf16": H100_BF16, "fp8": H100_FP8}
_H100_EFF = {"compute_efficiency": _H100_COMPUTE, "memory_efficiency": H100_MEMORY}
# No calibration data: the middle of the fitted range, stated as an assumption in the docs.
_ASSUMED_EFF = {"compute_efficiency": {"bf16": 0.45, "fp8": 0.45}, "memory_efficiency": 0.62}

GPU_PRESETS: dict[str, dict[str, Any]] = {
    # NVIDIA A100 datasheet, 80GB SXM: 312 BF16, 624 INT8 TOPS, 2,039 GB/s; NVLink 3: 600 GB/s.
    "a100-80gb": {
        "tflops": 312.0,
        "peak_tflops": {"int8": 624.0},
        "hbm_gbps": 2039.0,
        "memory_gib": 80.0,
        "gpus_per_node": 8,
        "link_gbps": 300.0,
        **_A100_EFF,
    },
    # The same datasheet, 40GB SXM: 1,555 GB/s HBM2.
    "a100-40gb": {
        "tflops": 312.0,
        "peak_tflops": {"int8": 624.0},
        "hbm_gbps": 1555.0,
        "memory_gib": 40.0,
        "gpus_per_node": 8,
        "link_gbps": 300.0,
        **_A100_EFF,
    },
    # NVIDIA H100 datasheet, SXM: 1,979 BF16 / 3,958 FP8 with sparsity; 3.35 TB/s; NVLink 4 900.
    "h100-80gb": {
        "tflops": 989.5,
        "peak_tflops": {"fp8": 1979.0, "int8": 1979.0},
        "hbm_gbps": 3350.0,
        "memory_gib": 80.0,
        "gpus_per_node": 8,
        "link_gbps": 450.0,
        **_H100_EFF,
    },
    # The same datasheet, PCIe: 1,513 BF16 / 3,026 FP8 sparse; 2 TB/s; NVLink bridge 600 GB/s
    # for pairs (else PCIe Gen5, 128 GB/s), so two GPUs per tensor-parallel group.
    "h100-pcie": {
        "tflops": 756.5,
        "peak_tflops": {"fp8": 1513.0, "int8": 1513.0},
        "hbm_gbps": 2000.0,
        "memory_gib": 80.0,
        "gpus_per_node": 2,
        "link_gbps": 300.0,
        **_H100_EFF,
    },
    # NVIDIA H200 datasheet, SXM: the H100's compute, 4.8 TB/s HBM3e, 141 GB, NVLink 900 GB/s.
    "h200": {
        "tflops": 989.5,
        "peak_tflops": {"fp8": 1979.0, "int8": 1979.0},
        "hbm_gbps": 4800.0,
        "memory_gib": 141.0,
        "gpus_per_node": 8,
        "link_gbps": 450.0,
        "compute_efficiency": _H100_COMPUTE,
        "memory_efficiency": H200_MEMORY,
    },
    # NVIDIA HGX B200 spec table: 2.25 / 4.5 / 9 PFLOP/s dense BF16 / FP8 / FP4, 7.7 TB/s,
    # 180 GB; NVLink 5: 1,800 GB/s.
    "b200": {
        "tflops": 2250.0,
        "peak_tflops": {"fp8": 4500.0, "int8": 4500.0, "fp4": 9000.0},
        "hbm_gbps": 7700.0,
        "memory_gib": 180.0,
        "gpus_per_node": 8,
        "link_gbps": 900.0,
        # FP4 and memory fitted on its runs; BF16 and FP8 assumed the H100's (no data)
        "compute_efficiency": {**_H100_COMPUTE, "fp4": B200_FP4},
        "memory_efficiency": B200_MEMORY,
    },
    # NVIDIA L40S datasheet: 733 BF16 / 1,466 FP8 with sparsity, 864 GB/s GDDR6, 48 GB, PCIe
    # Gen4 x16 (64 GB/s, no NVLink).
    "l40s": {
        "tflops": 366.5,
        "peak_tflops": {"fp8": 733.0, "int8": 733.0},
        "hbm_gbps": 864.0,
        "memory_gib": 48.0,
        "gpus_per_node": 8,
        "link_gbps": 32.0,
        **_ASSUMED_EFF,
    },
    # AMD Instinct MI300X datasheet: 1,307.4 BF16 / 2,614.9 FP8 dense, 5.3 TB/s, 192 GB;
    # Infinity Fabric 7 links x 64 GB/s per direction to the other seven GPUs.
    "mi300x": {
        "tflops": 1307.4,
        "peak_tflops": {"fp8": 2614.9, "int8": 2614.9},
        "hbm_gbps": 5300.0,
        "memory_gib": 192.0,
        "gpus_per_node": 8,
        "link_gbps": 448.0,
        **_ASSUMED_EFF,
    },
}

__all__ = ["GIB", "GPU_PRESETS", "MODEL_PRESETS", "from_hf_config", "kv_bytes_per_token"]


def weight_bytes(model: Any) -> int:
    """All weights' bytes; MoE experts may have their own precision (config/moe_shapes.py)."""
    return moe_shapes.weight_bytes(model)


def kv_bytes_per_token(model: Any) -> int:
    """Keys and values of one token in every layer: 2 * layers * kv_heads * head_dim * dtype
    for GQA; MLA and sliding-window layers as config/moe_shapes.py computes them."""
    return moe_shapes.kv_bytes_per_token(model)


def usable_bytes(gpu: Any, tp: int, utilization: float) -> float:
    """The memory a replica of `tp` GPUs may use (vLLM's `gpu_memory_utilization` share)."""
    return gpu.memory_gib * GIB * tp * utilization


def blocks_from_memory(
    gpu: Any,
    model: Any,
    tp: int,
    utilization: float,
    block_size: int,
    copies: int = 1,
    replicated_bytes: int = 0,
) -> int:
    """KV blocks that fit beside the weights: (usable memory - weights) / bytes per block.

    Activations and CUDA graphs, which vLLM also subtracts, are left out: the blocks are an
    upper bound of what vLLM would report, by a few percent for these models. `copies`: GPUs
    that each hold a token's KV (MLA's latent under attention TP, config/moe_serving.py).
    `replicated_bytes`: weights held more than once (attention under attention data
    parallelism, config/moe_serving.py `replicated_attention_bytes`).
    """
    spare = usable_bytes(gpu, tp, utilization) - weight_bytes(model) - replicated_bytes
    return max(0, int(spare // (kv_bytes_per_token(model) * copies * block_size)))
