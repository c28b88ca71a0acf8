"""The part of an overlapped step the overlap cannot hide (`overlap_exposed_ms`; docs/engines.md,
"CPU time"): iteration = max(gpu, cpu) + x, on hand-computed cases, as the profiles set it, and
refused where it would do nothing."""

from __future__ import annotations

import numpy as np
import pytest

from simsched.config.engines import OVERLAP_EXPOSED_MS
from simsched.errors import InputError
from simsched.sim.cluster.cpu_time import CpuShared, build_engine_latency
from tests.config.test_engine_profiles import cluster_of
from tests.sim.engines.test_engine_mechanisms import FixedGpu


@pytest.mark.parametrize(
    ("gpu_ms", "expected"),
    [
        (10.0, 10.75),  # max(10, 2 + 0.5 * 4) + 0.75: the CPU hides, the exposed part does not
        (3.0, 4.75),  # max(3, 4) + 0.75: the GPU waits for the CPU, then the exposed part
    ],
)
def test_overlap_adds_the_exposed_part_to_the_longer_of_gpu_and_cpu(gpu_ms, expected) -> None:
    latency = CpuShared(FixedGpu(gpu_ms), 2.0, 0.5, "overlap", 1, exposed_ms=0.75)
    assert latency.iteration_ms(0, 0, 0, 4, 100) == expected
    run = latency.iteration_ms(0, 0, 0, 4, np.array([100, 104]), np.maximum)
    assert run.tolist() == [expected, expected]  # the fast-forward path agrees


def test_serial_and_multi_step_never_add_it() -> None:
    # 10 + 4 and 10 + 4 / 4, as without it: those modes already charge the whole CPU time
    assert CpuShared(FixedGpu(10.0), 2.0, 0.5, "serial", 1, 0.75).iteration_ms(0, 0, 0, 4, 0) == 14
    multi = CpuShared(FixedGpu(10.0), 2.0, 0.5, "multi_step", 4, 0.75)
    assert multi.iteration_ms(0, 0, 0, 4, 0) == 11.0


@pytest.mark.parametrize("engine", sorted(OVERLAP_EXPOSED_MS))
def test_each_overlap_engine_sets_its_exposed_time(engine) -> None:
    config = cluster_of(engine=engine)
    assert config.cpu_time == "overlap"
    assert config.overlap_exposed_ms == OVERLAP_EXPOSED_MS[engine]
    latency = build_engine_latency(config)
    assert latency.exposed_ms == OVERLAP_EXPOSED_MS[engine]


def test_a_written_value_overrides_the_profile() -> None:
    assert cluster_of(engine="sglang", overlap_exposed_ms=2.5).overlap_exposed_ms == 2.5
    # an explicit cpu_time other than overlap charges the whole CPU time: the profile's value
    # is left out (and the config re-validates from its own dump, as `checked` does)
    serial = cluster_of(engine="trtllm", cpu_time="serial")
    assert (serial.cpu_time, serial.overlap_exposed_ms) == ("serial", None)
    assert type(serial).model_validate(serial.model_dump()).overlap_exposed_ms is None


def test_without_an_engine_it_is_unset() -> None:
    assert cluster_of().overlap_exposed_ms is None


@pytest.mark.parametrize("cpu_time", [None, "serial"])
def test_written_without_overlap_it_is_refused(cpu_time) -> None:
    settings = {"overlap_exposed_ms": 1.0} | ({"cpu_time": cpu_time} if cpu_time else {})
    with pytest.raises(InputError, match="overlap_exposed_ms"):
        cluster_of(**settings)


LINEAR = {
    "kind": "linear",
    "base_ms": 5.0,
    "prefill_ms_per_token": 0.01,
    "decode_ms_per_seq": 0.1,
    "attention_ms_per_1k_context": 0.01,
}


def test_written_with_the_linear_model_it_is_refused() -> None:
    # the linear model runs as given (build_engine_latency applies no cpu_time to it), so a
    # written exposed time would change nothing; the profile's own value stays silent
    with pytest.raises(InputError, match="overlap_exposed_ms") as caught:
        cluster_of(latency_model=LINEAR, cpu_time="overlap", overlap_exposed_ms=2.0)
    assert caught.value.where == "cluster.overlap_exposed_ms"
    assert cluster_of(latency_model=LINEAR, engine="sglang").overlap_exposed_ms == 0.763


def test_the_refusal_names_the_field() -> None:
    with pytest.raises(InputError) as caught:
        cluster_of(overlap_exposed_ms=1.0)
    assert caught.value.where == "cluster.overlap_exposed_ms"
