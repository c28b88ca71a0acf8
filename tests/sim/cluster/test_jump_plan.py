"""The roofline's jump planned in one loop (fast_forward.roofline_jump) against the two plans it
stands for, `block_needs` (checked against stepping in test_block_needs.py) and `decode_run`
(checked against stepping in test_latency.py): the same block needs and end instants, to the
bit, over random decode sets, clocks, free blocks and horizons."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from simsched.config import presets
from simsched.sim.cluster.fast_forward import block_needs, plan_jump, roofline_jump
from simsched.sim.cluster.latency import SHORT_RUN, LinearLatency, RooflineLatency, decode_run
from simsched.sim.cluster.sequences import DecodeSet

H100 = SimpleNamespace(**presets.GPU_PRESETS["h100-80gb"])
LLAMA_8B = SimpleNamespace(**presets.MODEL_PRESETS["llama-3-8b"])


def roofline(rng: random.Random) -> RooflineLatency:
    config = SimpleNamespace(
        efficiency=0.5,
        compute_efficiency=None,
        memory_efficiency=None,
        overhead_ms=rng.uniform(0, 5),
        per_seq_ms=rng.uniform(0, 0.05),
        allreduce_us=rng.uniform(0, 30),
        frontend_before_ms=0.0,
        frontend_after_ms=0.0,
    )
    return RooflineLatency(config, H100, LLAMA_8B, tp=rng.choice([1, 2, 4, 8]))


def decode_set(rng: random.Random) -> DecodeSet:
    decoding = DecodeSet(rng.choice([1, 3, 16]))
    decoding.count = rng.randint(1, 300)
    decoding.sum_off = rng.randint(0, 500_000)
    # sparse residues (most iterations take no block) or crowded ones
    decoding.residues = [rng.choice([0, 0, 0, 1, 4]) for _ in range(decoding.block_size)]
    return decoding


@pytest.mark.parametrize("seed", range(8))
def test_the_one_loop_plan_is_the_two_plans(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        latency, decoding = roofline(rng), decode_set(rng)
        it, t = rng.randint(0, 20_000), rng.uniform(0, 1e7)
        horizon = rng.choice([1, 2, 9, SHORT_RUN, SHORT_RUN + 5, 512])
        free = rng.choice([0, 1, 6, 40, 100_000])
        need = block_needs(decoding, it, horizon, free)
        ends = decode_run(latency, t, decoding.count, decoding.context(it), len(need))
        assert roofline_jump(decoding, it, t, free, latency, horizon) == (ends, need)


def test_a_jump_is_planned_alike_on_either_path() -> None:
    # plan_jump takes the one loop for the roofline; a model of another type takes the two
    # plans, and a roofline model seen as such gives the same jump
    rng = random.Random(3)

    class OtherRoofline(RooflineLatency):  # not the exact type: the general path
        pass

    for _ in range(100):
        latency = roofline(rng)
        other = OtherRoofline.__new__(OtherRoofline)
        other.__dict__.update(vars(latency))
        other.decode_fixed = {}
        decoding = decode_set(rng)
        finish = rng.randint(0, 40)
        decoding.by_finish = {finish: []}
        decoding.finish_heap = [finish]
        it, t, free = rng.randint(0, finish), rng.uniform(0, 1e6), rng.choice([0, 3, 10_000])
        one, two = (
            plan_jump(decoding, it, t, free, latency),
            plan_jump(decoding, it, t, free, other),
        )
        assert (one is None) == (two is None)
        if one is not None:
            assert (one.first, one.ends, one.need) == (two.first, two.ends, two.need)


def test_a_linear_model_keeps_the_two_plans() -> None:
    config = SimpleNamespace(
        base_ms=1.0, prefill_ms_per_token=0.0, decode_ms_per_seq=0.5, attention_ms_per_1k_context=1
    )
    decoding = DecodeSet(4)
    decoding.count, decoding.sum_off, decoding.residues = 2, 10, [1, 0, 0, 0]
    decoding.by_finish, decoding.finish_heap = {9: []}, [9]
    jump = plan_jump(decoding, 0, 0.0, 100, LinearLatency(config))
    # iterations 0..9 (horizon 10: it finishes at the end of iteration 9)
    need = block_needs(decoding, 0, 10, 100)
    assert jump is not None and jump.need == need
    assert jump.ends == decode_run(LinearLatency(config), 0.0, 2, 10, len(need))
