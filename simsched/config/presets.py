"""GPU and model presets, and the memory arithmetic of a paged KV cache (no SimPy here).

The figures are public: vendor datasheets for the GPUs, the Llama 3 model cards and their
`config.json` for the models (sources in docs/continuous_batching.md). They are plain mappings
so that `cluster_config` can validate a preset and a user's own mapping the same way.

GPU: `tflops` dense BF16 tensor-core TFLOP/s (datasheets quote the 2:4-sparse figure, twice
this), `hbm_gbps` memory bandwidth in GB/s (10^9 bytes), `memory_gib` device memory,
`gpus_per_node` the GPUs one NVLink node holds (the largest sensible tensor-parallel degree).
Model: `params` parameter count, `layers`, `hidden_size`, `kv_heads`, `head_dim`, `dtype_bytes`
(2 for BF16, used for the weights and the KV cache alike).
"""

from __future__ import annotations

from typing import Any

GIB = 1024**3

GPU_PRESETS: dict[str, dict[str, Any]] = {
    # NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column.
    "a100-80gb": {"tflops": 312.0, "hbm_gbps": 2039.0, "memory_gib": 80.0, "gpus_per_node": 8},
    # NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (1,979 TFLOP/s with sparsity).
    "h100-80gb": {"tflops": 989.5, "hbm_gbps": 3350.0, "memory_gib": 80.0, "gpus_per_node": 8},
    # NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column (1,979 TFLOP/s with sparsity).
    "h200": {"tflops": 989.5, "hbm_gbps": 4800.0, "memory_gib": 141.0, "gpus_per_node": 8},
}

MODEL_PRESETS: dict[str, dict[str, Any]] = {
    # Meta-Llama-3-8B config.json: 32 layers, hidden 4096, 32 query / 8 KV heads, vocab 128256,
    # MLP 14336, untied embeddings, bfloat16. The parameter count is the exact sum of those
    # shapes (the model card rounds it to 8B).
    "llama-3-8b": {
        "params": 8_030_261_248,
        "layers": 32,
        "hidden_size": 4096,
        "kv_heads": 8,
        "head_dim": 128,
        "dtype_bytes": 2,
    },
    # Meta-Llama-3-70B config.json: 80 layers, hidden 8192, 64 query / 8 KV heads, MLP 28672.
    "llama-3-70b": {
        "params": 70_553_706_496,
        "layers": 80,
        "hidden_size": 8192,
        "kv_heads": 8,
        "head_dim": 128,
        "dtype_bytes": 2,
    },
}


def weight_bytes(model: Any) -> int:
    return int(model.params * model.dtype_bytes)


def kv_bytes_per_token(model: Any) -> int:
    """Keys and values of one token in every layer: 2 * layers * kv_heads * head_dim * dtype."""
    return 2 * model.layers * model.kv_heads * model.head_dim * model.dtype_bytes


def usable_bytes(gpu: Any, tp: int, utilization: float) -> float:
    """The memory a replica of `tp` GPUs may use (vLLM's `gpu_memory_utilization` share)."""
    return gpu.memory_gib * GIB * tp * utilization


def blocks_from_memory(gpu: Any, model: Any, tp: int, utilization: float, block_size: int) -> int:
    """KV blocks that fit beside the weights: (usable memory - weights) / bytes per block.

    Activations and CUDA graphs, which vLLM also subtracts, are left out: the blocks are an
    upper bound of what vLLM would report, by a few percent for these models.
    """
    spare = usable_bytes(gpu, tp, utilization) - weight_bytes(model)
    return max(0, int(spare // (kv_bytes_per_token(model) * block_size)))
