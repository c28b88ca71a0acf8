"""`cpu_time: multi_step` pays the CPU time once per `num_scheduler_steps` iterations
(docs/engines.md, "CPU time"): written with one step it would be serial without a word, so it is
refused; `engine: vllm-0.6` alone keeps it, since one step is vLLM 0.6's own default."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from simsched.cli.app import main
from simsched.errors import InputError
from simsched.sim.cluster.cpu_time import build_engine_latency
from tests.config.test_engine_profiles import cluster_of

BATCHING = Path(__file__).resolve().parents[2] / "scenarios" / "noisy_neighbor_batching.yaml"


def test_multi_step_written_with_one_step_exits_2_in_one_line(monkeypatch, capsys) -> None:
    argv = ["simsched", "validate", str(BATCHING), "--set", "cluster.cpu_time=multi_step"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "noisy_neighbor_batching.yaml" in err and "cluster" in err and "cpu_time" in err
    # located at the setting, as a range error on it is: cluster.cpu_time, not cluster: cpu_time
    assert "--set cluster.cpu_time=multi_step: cluster.cpu_time: multi_step amortises" in err


def test_multi_step_beside_vllm_0_6_written_with_one_step_is_refused_too() -> None:
    with pytest.raises(InputError, match="num_scheduler_steps"):
        cluster_of(engine="vllm-0.6", cpu_time="multi_step")


def test_vllm_0_6_alone_keeps_multi_step_with_its_default_one_step_as_serial() -> None:
    config = cluster_of(engine="vllm-0.6")
    assert (config.cpu_time, config.num_scheduler_steps) == ("multi_step", 1)
    serial = build_engine_latency(cluster_of(engine="vllm-0.6", cpu_time="serial"))
    amortised = build_engine_latency(config)
    # k = 1: gpu + cpu / 1, the serial sum, for a decode batch of 8 sequences
    assert amortised.iteration_ms(0, 0, 0, 8, 4000) == pytest.approx(
        serial.iteration_ms(0, 0, 0, 8, 4000), rel=1e-12
    )


def test_multi_step_with_several_steps_is_accepted() -> None:
    config = cluster_of(cpu_time="multi_step", num_scheduler_steps=4)
    assert (config.cpu_time, config.num_scheduler_steps) == ("multi_step", 4)
