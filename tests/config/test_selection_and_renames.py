"""Small input rules: `--variant` leaves the other variants unvalidated, the calibration key
`max_iterations` (the old `max_evaluations` read with a warning), and per-GPU latency settings
(`cluster.gpu_overrides`) that a fleet search's GPU swap keeps."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simsched.config.loading import load_scenario, resolve_variants
from simsched.errors import InputError
from simsched.sim.cluster.latency import build_latency
from simsched.studies.calibration.spec import load_calibration

REPO = Path(__file__).resolve().parents[2]
PREFIX_ROUTING = REPO / "scenarios" / "prefix_routing.yaml"
FLEET = REPO / "scenarios" / "fleet_planning.yaml"


def test_variant_selection_exempts_the_others_from_validation() -> None:
    off = ["cluster.prefix_caching=false"]
    # prefix_aware scores replicas on their caches: without caching it is invalid
    with pytest.raises(InputError, match=r"variants\[2\] \(prefix_aware\)"):
        load_scenario(PREFIX_ROUTING, off)
    scenario = load_scenario(PREFIX_ROUTING, off, ["round_robin"])
    assert [name for name, _ in resolve_variants(scenario)] == ["round_robin"]
    chosen = load_scenario(PREFIX_ROUTING, off, ["load_only", "round_robin"])  # file order
    assert [name for name, _ in resolve_variants(chosen)] == ["round_robin", "load_only"]
    with pytest.raises(InputError, match=r"--variant: no variant 'nope' \(known: round_robin"):
        load_scenario(PREFIX_ROUTING, off, ["nope"])


CALIBRATION = {
    "settings": [{"path": "cluster.latency_model.overhead_ms", "low": 0.0, "high": 5.0}],
    "cases": [{"name": "c", "scenario": "s.yaml", "metric": "span_ms", "measured": 100.0}],
}


def calibration(folder: Path, **keys) -> Path:
    (folder / "s.yaml").write_text((FLEET).read_text(encoding="utf-8"), encoding="utf-8")
    path = folder / "cal.yaml"
    path.write_text(yaml.safe_dump(CALIBRATION | keys), encoding="utf-8")
    return path


def test_max_iterations_and_its_old_name(tmp_path: Path) -> None:
    spec, _, _ = load_calibration(calibration(tmp_path, max_iterations=7))
    assert spec.max_iterations == 7 and spec.warnings == []
    spec, _, _ = load_calibration(calibration(tmp_path, max_evaluations=9))
    assert spec.max_iterations == 9
    assert spec.warnings == [
        f"{tmp_path / 'cal.yaml'}: max_evaluations is now max_iterations (it counts the "
        "optimiser's iterations, each of which evaluates every case); rename it"
    ]
    with pytest.raises(InputError, match="max_evaluations: give max_iterations only"):
        load_calibration(calibration(tmp_path, max_iterations=7, max_evaluations=9))


# Iterations to compare: a prefill chunk (compute-bound), a decode batch (memory-bound), mixed.
SHAPES = [(2048, 1, 0, 0, 0), (0, 0, 0, 64, 64 * 1500), (512, 1, 1000, 32, 32 * 800)]


def iterations(scenario) -> list[float]:
    cluster = resolve_variants(scenario)[-1][1].cluster
    latency = build_latency(cluster)
    return [float(latency.iteration_ms(*shape)) for shape in SHAPES]


def test_gpu_overrides_apply_to_their_gpu_only_and_survive_a_gpu_swap() -> None:
    overrides = "cluster.gpu_overrides={a100-80gb: {compute_efficiency: 0.3, overhead_ms: 2.5}}"
    # what the override means: the same as setting those values in latency_model, on the A100
    direct = load_scenario(FLEET, ["cluster.gpu=a100-80gb",
                                   "cluster.latency_model={kind: roofline, compute_efficiency: 0.3,"
                                   " overhead_ms: 2.5}"])  # fmt: skip
    # the override given first, then the GPU swapped in, as `plan --over cluster.gpu=...` does
    swapped = load_scenario(FLEET, [overrides, "cluster.gpu=a100-80gb"])
    plain_a100 = load_scenario(FLEET, ["cluster.gpu=a100-80gb"])
    assert iterations(swapped) == iterations(direct)
    assert iterations(swapped) != iterations(plain_a100)
    # on the H100 the A100's settings change nothing
    on_h100 = load_scenario(FLEET, [overrides, "cluster.gpu=h100-80gb"])
    assert iterations(on_h100) == iterations(load_scenario(FLEET, ["cluster.gpu=h100-80gb"]))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{a100-80g: {compute_efficiency: 0.3}}", "no GPU 'a100-80g' (known: a100-80gb"),
        ("{a100-80gb: {compute_efficiency: 1.5}}", "compute_efficiency"),
        ("{a100-80gb: {tflops: 300}}", "tflops"),
    ],
)
def test_bad_gpu_overrides_are_input_errors(value: str, message: str) -> None:
    with pytest.raises(InputError, match=r"cluster\.gpu_overrides") as error:
        load_scenario(FLEET, [f"cluster.gpu_overrides={value}"])
    assert message in str(error.value)


def test_gpu_overrides_need_the_roofline() -> None:
    linear = (
        "cluster.latency_model={kind: linear, base_ms: 1, prefill_ms_per_token: 0.01, "
        "decode_ms_per_seq: 0.1}"
    )
    with pytest.raises(InputError, match="gpu_overrides set roofline latency settings per GPU"):
        load_scenario(FLEET, [linear, "cluster.gpu_overrides={h100-80gb: {overhead_ms: 1}}"])
