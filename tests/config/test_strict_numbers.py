"""Issue 10 item 13: numbers are numbers. YAML `true` and the string "1_5" are not accepted as
numbers (pydantic's lax mode took them), while ints stay welcome where a float is expected and
`1e6`, which YAML 1.1 reads as a string, is read as the number everyone means."""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.config.loading import load_scenario
from simsched.config.yaml_io import parse_yaml_mapping
from simsched.errors import InputError

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "scenarios" / "noisy_neighbor.yaml"
BATCHING = REPO / "scenarios" / "noisy_neighbor_batching.yaml"


@pytest.mark.parametrize(
    "assignment",
    [
        "seed=true",
        'seed="15"',
        'tenants.0.weight="1_5"',
        "tenants.0.weight=true",
        "tenants.0.arrivals.count=true",
        "tenants.0.arrivals.count=2.5",
        "tenants.0.prefill_tokens=false",
        "cluster.total_kv_blocks=1e30",
        "cluster.service_tokens_per_ms=yes",
        'admission.max_interactive_wait_ms="420"',
    ],
)
def test_non_numbers_are_refused(assignment: str) -> None:
    with pytest.raises(InputError) as info:
        load_scenario(STUDY, [assignment])
    assert f"--set {assignment}" in str(info.value)


def test_a_bool_is_not_a_replica_count() -> None:
    with pytest.raises(InputError, match="cluster.replicas"):
        load_scenario(BATCHING, ["cluster.replicas=true"])


@pytest.mark.parametrize(
    ("assignment", "value"),
    [
        ("tenants.0.weight=2", 2.0),
        ("tenants.0.weight=1e1", 10.0),
        ("tenants.0.weight=2.5e-1", 0.25),
        ("tenants.0.weight=1_5", 15.0),  # YAML 1.1's own digit groups, unquoted
    ],
)
def test_numbers_written_naturally_are_accepted(assignment: str, value: float) -> None:
    assert load_scenario(STUDY, [assignment]).tenants[0].weight == value


def test_exponents_read_as_numbers_in_files() -> None:
    raw = parse_yaml_mapping("a: 1e6\nb: -2.5E-3\nc: 1e+20\nd: 1.0\ne: '1e6'\nf: 12\n", "x")
    assert raw == {"a": 1e6, "b": -2.5e-3, "c": 1e20, "d": 1.0, "e": "1e6", "f": 12}
    # without a dot or a negative exponent, the exact whole number; with one, a float
    assert type(raw["a"]) is int and raw["c"] == 10**20 and type(raw["b"]) is float
    raw = parse_yaml_mapping("a: 1.5e3\nb: 12345678901234567e3\nc: 1e500\n", "x")
    assert raw == {"a": 1500.0, "b": 12345678901234567000, "c": float("inf")}


@pytest.mark.parametrize(
    ("assignment", "field", "value"),
    [
        ("limits.max_requests=5e7", ("limits", "max_requests"), 50_000_000),
        ("tenants.0.arrivals.count=2e1", ("tenants", 0, "arrivals", "count"), 20),
        ("tenants.0.weight=1e1", ("tenants", 0, "weight"), 10.0),
    ],
)
def test_whole_numbers_in_exponent_form_fit_integer_settings(assignment, field, value) -> None:
    node = load_scenario(STUDY, [assignment])
    for part in field:
        node = node[part] if isinstance(part, int) else getattr(node, part)
    assert node == value and type(node) is type(value)


def test_a_whole_float_for_an_integer_says_how_to_write_it() -> None:
    from simsched.config.loading import scenario_from_mapping

    raw = parse_yaml_mapping(STUDY.read_text(), str(STUDY))
    raw["limits"] = {"max_requests": 1000.0}  # as JSON or a Python caller gives it
    with pytest.raises(InputError, match="write it as an integer") as info:
        scenario_from_mapping(raw, [], "x")
    assert "fractional" not in str(info.value)


@pytest.mark.parametrize(
    "assignment",
    [
        "cluster.total_kv_blocks=1000000000000000000000000000000",
        "cluster.service_tokens_per_ms=1e300",
        "cluster.min_prefill_ms=1e300",
    ],
)
def test_cluster_numbers_are_bounded(assignment: str) -> None:
    with pytest.raises(InputError, match=assignment.split("=")[0]):
        load_scenario(STUDY, [assignment])


@pytest.mark.parametrize(
    "assignment",
    [
        "cluster.num_gpu_blocks=1000000000000000000000000000000",
        "cluster.max_num_batched_tokens=1000000000000000000000000000000",
        "cluster.gpu={tflops: 1e300, hbm_gbps: 1, memory_gib: 80}",
        "cluster.model={params: 1e300, layers: 1, hidden_size: 1, kv_heads: 1, head_dim: 1}",
    ],
)
def test_batching_numbers_are_bounded(assignment: str) -> None:
    with pytest.raises(InputError, match=assignment.split("=")[0]):
        load_scenario(BATCHING, [assignment])
