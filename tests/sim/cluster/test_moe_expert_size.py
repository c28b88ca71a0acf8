"""The experts' compute share by the size of their weight matrices (docs/moe.md, "Expert size"):
a GEMM on a larger weight matrix reaches more of the tensor cores' peak, so the fitted share,
stated at DeepSeek-V3's expert (2,048 x 7,168), is scaled by (S / S_ref) ^ a, at most 1. The
exponent is derived here from its source's table; the shares and times by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simsched.config.moe_serving import (
    EXPERT_SIZE_EXPONENT,
    REFERENCE_EXPERT_ELEMENTS,
    MoeServingSpec,
)
from simsched.sim.cluster.moe_latency import MoeRooflineLatency, expert_compute_share
from tests.sim.cluster.test_moe_tile_padding import CONFIG, H200, MIXTRAL

# deepseek-ai/DeepGEMM README.md @327ec92f, "Normal GEMMs for dense models", H800 SXM5, FP8,
# the rows with M = 4,096: (N, K, TFLOPS)
DEEPGEMM_M4096 = [
    (2112, 7168, 1127),
    (24576, 1536, 1212),
    (32768, 512, 775),
    (7168, 16384, 1520),
    (4096, 7168, 1410),
    (7168, 2048, 1168),
]


def test_the_exponent_is_the_slope_of_the_published_gemm_table() -> None:
    # least squares of log TFLOPS on log (N x K): the shipped exponent is that slope, rounded
    sizes = np.log([n * k for n, k, _ in DEEPGEMM_M4096])
    rates = np.log([t for *_, t in DEEPGEMM_M4096])
    slope = np.polyfit(sizes, rates, 1)[0]
    assert EXPERT_SIZE_EXPONENT == round(float(slope), 3) == 0.196
    # the reference is DeepSeek-V3's expert: 2,048 wide on a 7,168 hidden size
    assert REFERENCE_EXPERT_ELEMENTS == 14_680_064


def test_shares_by_hand() -> None:
    spec = MoeServingSpec(expert_compute_efficiency=0.7)
    # DeepSeek-V3's expert whole on one GPU (ep = tp = 8): the reference, so the share as fitted
    assert (
        expert_compute_share(MoeServingSpec(ep=8, expert_compute_efficiency=0.7), 2048, 7168, 8)
        == 0.7
    )
    # Mixtral 8x7B on TP 8 without ep: each GPU holds 14,336 / 8 = 1,792 of each expert's width
    # on a 4,096 hidden size, 7,340,032 elements: half the reference, 0.7 x 2^-0.196
    assert expert_compute_share(spec, 14336, 4096, 8) == pytest.approx(0.7 * 0.5**0.196)
    assert expert_compute_share(spec, 14336, 4096, 8) == pytest.approx(0.6110, abs=1e-4)
    # on one GPU: four times the reference, 0.7 x 4^0.196 = 0.9185
    assert expert_compute_share(spec, 14336, 4096, 1) == pytest.approx(0.9185, abs=1e-4)
    # Mixtral on TP 8 with ep 2: each expert split over 4 GPUs, 3,584 x 4,096, the reference size
    split = MoeServingSpec(ep=2, expert_compute_efficiency=0.7)
    assert expert_compute_share(split, 14336, 4096, 8) == pytest.approx(0.7)
    # never above a dense GEMM's rate: 0.9 x 1.3122 is capped at 1
    high = MoeServingSpec(expert_compute_efficiency=0.9)
    assert expert_compute_share(high, 14336, 4096, 1) == 1.0
    # exponent 0: every size gets the fitted share
    flat = MoeServingSpec(expert_compute_efficiency=0.7, expert_size_exponent=0.0)
    assert expert_compute_share(flat, 768, 2048, 1) == 0.7
    # expert_efficiency sets the share the size scales
    both = MoeServingSpec(expert_efficiency=0.5)
    assert expert_compute_share(both, 768, 2048, 1) == pytest.approx(
        0.5 * (768 * 2048 / 14_680_064) ** 0.196
    )


def test_a_padding_row_runs_at_the_scaled_share() -> None:
    # a padding row is purely routed-expert work: its time is the FLOPs over the share, so on
    # Mixtral TP 8 (half the reference) it takes 2^0.196 = 1.1456 times what it takes at the
    # unscaled share, and on one GPU (four times the reference) 4^-0.196 times
    def row_ms(tp: int, exponent: float) -> float:
        serving = MoeServingSpec(expert_compute_efficiency=0.7, expert_size_exponent=exponent)
        return MoeRooflineLatency(CONFIG, H200, MIXTRAL, tp, serving).row_ms

    assert row_ms(8, EXPERT_SIZE_EXPONENT) / row_ms(8, 0.0) == pytest.approx(2**0.196)
    assert row_ms(1, EXPERT_SIZE_EXPONENT) / row_ms(1, 0.0) == pytest.approx(4**-0.196)


def test_a_compute_bound_chunk_by_hand() -> None:
    # Mixtral 8x7B (BF16) on one H200, a 4,096-token prefill chunk, no padding: its routed FLOPs
    # (2 of 8 experts, 3 x 4,096 x 14,336 weights each, 32 layers, 2 FLOPs a weight) run at the
    # BF16 peak x the GPU's BF16 share x the experts' scaled share; with exponent 0 at the
    # fitted share. The difference between the two is the routed FLOPs over the two rates
    tokens, share = 4096, 0.7
    scaled = share * 4**0.196

    def chunk(exponent: float) -> float:
        serving = MoeServingSpec(
            expert_compute_efficiency=share, expert_size_exponent=exponent, expert_tile_rows=0
        )
        model = MoeRooflineLatency(CONFIG, H200, MIXTRAL, 1, serving)
        return model.iteration_ms(tokens, tokens * (tokens + 1) // 2, 0, 0, 0)

    flops = 2 * tokens * 32 * 2 * 3 * 4096 * 14336
    rate = H200.tflops * 1e9 * H200.compute_efficiency["bf16"]  # BF16 FLOPs per ms
    expected = flops / rate * (1 / share - 1 / scaled)
    assert chunk(0.0) - chunk(EXPERT_SIZE_EXPONENT) == pytest.approx(expected, rel=1e-9)
    assert math.isclose(scaled, 0.9185, abs_tol=1e-4)
