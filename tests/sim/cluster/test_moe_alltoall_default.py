"""The all-to-all's fixed latency: `moe_serving.alltoall_us` when given, else the named
assumption that it equals the running latency model's `allreduce_us` (config/moe_serving.py,
`alltoall_latency_us`; docs/moe.md), so one calibrated value drives both collectives."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from simsched.config import presets
from simsched.config.hardware import ModelSpec, RooflineLatencyConfig
from simsched.config.moe_serving import MoeServingSpec
from simsched.sim.cluster.moe_latency import MoeRooflineLatency

H200 = SimpleNamespace(**presets.GPU_PRESETS["h200"])
R1 = ModelSpec(name="deepseek-r1", **presets.MODEL_PRESETS["deepseek-r1"])
DEP8 = MoeServingSpec(ep=8, attention_dp=8)


def decode_ms(allreduce_us: float, serving: MoeServingSpec = DEP8) -> float:
    config = RooflineLatencyConfig(kind="roofline", allreduce_us=allreduce_us)
    return MoeRooflineLatency(config, H200, R1, 8, serving).iteration_ms(0, 0, 0, 64, 0)


def test_unset_alltoall_follows_the_all_reduce_latency_by_hand() -> None:
    # DeepSeek-R1 DEP8: 3 dense layers all-reduce their FFN, 58 MoE layers dispatch and combine
    # (116 all-to-alls); 40 us more on each collective is 119 x 0.04 ms
    assert decode_ms(50.0) - decode_ms(10.0) == pytest.approx(119 * 0.040, rel=1e-9)


def test_a_given_alltoall_latency_wins_over_the_all_reduce() -> None:
    pinned = DEP8.model_copy(update={"alltoall_us": 10.0})
    # only the 3 all-reduces move now
    assert decode_ms(50.0, pinned) - decode_ms(10.0, pinned) == pytest.approx(3 * 0.040, rel=1e-9)
    assert decode_ms(10.0, pinned) == decode_ms(10.0)  # the same value, given or assumed


def test_the_link_efficiency_slows_the_exchanges_bytes_only() -> None:
    # 64 decodes on DEP8: each GPU sends its 8 tokens' 8 copies, 7,168 BF16 values each, 7/8
    # elsewhere: 802,816 bytes an exchange, 116 exchanges (58 MoE layers, dispatch and
    # combine). At 0.4 of the link's 450 GB/s instead of the default 0.8 each takes twice as
    # long; the latency and the dense layers' all-reduces stay
    half = DEP8.model_copy(update={"link_efficiency": 0.4})
    per_exchange = 64 / 8 * 8 * 7168 * 2 * 7 / 8
    assert per_exchange == 802_816
    assert decode_ms(30.2, half) - decode_ms(30.2) == pytest.approx(
        116 * per_exchange / (0.8 * 450e6), rel=1e-9
    )
    assert decode_ms(50.0, half) - decode_ms(10.0, half) == pytest.approx(119 * 0.040, rel=1e-9)


def test_the_link_efficiency_is_a_share() -> None:
    from pydantic import ValidationError

    for bad in (0.0, 1.5):
        with pytest.raises(ValidationError):
            MoeServingSpec(link_efficiency=bad)
