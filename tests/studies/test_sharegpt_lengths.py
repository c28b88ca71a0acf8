"""The ShareGPT length draws of the engine cases (calibration/published.yaml, en_g2/3 at 4 clients
and en_g7/8/9 all at once; docs/continuous_batching.md, "ShareGPT lengths").

Each case draws lognormal lengths clipped to `vllm bench serve`'s ShareGPT bounds, with the
log-scale sigma of the Azure 2023 conversation trace and a median chosen so that the clipped mean
is the source row's own mean (moe_specdec_pd.md EN-G2/3: 23,260 prompt and 22,061 output tokens
over 100 requests; EN-G7/8/9: 217,393 prompt tokens and 201,422, 201,826, 201,723 output tokens
over 1,000 requests). The expected means below are those published
totals; the clipped mean is summed exactly over whole tokens, independently of the generator, and
a large draw of the generator itself must land on it.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from simsched.config.loading import load_scenario
from simsched.workload.lengths import draw_lengths

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "calibration" / "published.yaml"
AZURE_CONV = ROOT.parent / "shared/data/traces/azure_llm_2023_conv.csv"

# moe_specdec_pd.md §5a, "Tokens in / out" over 100 and 1,000 requests
PUBLISHED_MEANS = {
    "en_g2": (232.60, 220.61),
    "en_g3": (232.60, 220.61),
    "en_g7": (217.393, 201.422),
    "en_g8": (217.393, 201.826),
    "en_g9": (217.393, 201.723),
}
# vllm/benchmarks/datasets.py, is_valid_sequence: min_len 4, max_prompt_len 1024,
# max_total_len 2048 (so an output of at most 2048 - 4)
SAMPLER_BOUNDS = {"prefill": (4, 1024), "decode": (4, 2044)}


def _normal_cdf(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def clipped_mean(median: float, sigma: float, low: int, high: int) -> float:
    """E[clip(round(X), low, high)] for X lognormal(ln median, sigma), summed over whole tokens:
    round(X) = k for X in [k - 1/2, k + 1/2)."""

    def below(x: float) -> float:
        return _normal_cdf((math.log(x) - math.log(median)) / sigma)

    total = low * below(low + 0.5) + high * (1.0 - below(high - 0.5))
    for k in range(low + 1, high):
        total += k * (below(k + 0.5) - below(k - 0.5))
    return total


@functools.cache  # the tests only read the specs: one scenario load per case, not one a test
def _tenant_lengths(case_name: str) -> dict[str, Any]:
    """The case's tenant length specs, as the case file's overrides build them."""
    (case,) = [c for c in _cases() if c["name"] == case_name]
    # the case's own `set` list (the file's fitted settings touch no tenant)
    scenario = load_scenario(PUBLISHED.parent / case["scenario"], case["set"])
    tenant = scenario.tenants[0]
    return {"prefill": tenant.prefill_tokens, "decode": tenant.decode_tokens}


@functools.cache  # 100 kB of YAML: parsed once per test process, not once per case looked up
def _cases() -> list[dict[str, Any]]:
    return yaml.safe_load(PUBLISHED.read_text(encoding="utf-8"))["cases"]


def _sharegpt_cases() -> list[str]:
    return [c["name"] for c in _cases() if c["name"].startswith(tuple(PUBLISHED_MEANS))]


def test_every_sharegpt_case_draws_its_lengths() -> None:
    names = _sharegpt_cases()
    assert len(names) == 15  # output, TTFT and TPOT of five runs
    for name in names:
        lengths = _tenant_lengths(name)
        for side, (low, high) in SAMPLER_BOUNDS.items():
            spec = lengths[side]
            assert spec.dist == "lognormal", name
            assert (spec.min, spec.max) == (low, high), name


@pytest.mark.parametrize("row", sorted(PUBLISHED_MEANS))
def test_clipped_means_are_the_published_means(row: str) -> None:
    name = next(n for n in _sharegpt_cases() if n.startswith(row))
    lengths = _tenant_lengths(name)
    for side, published in zip(("prefill", "decode"), PUBLISHED_MEANS[row], strict=True):
        spec = lengths[side]
        mean = clipped_mean(spec.median, spec.sigma, spec.min, spec.max)
        # the median is written to 0.1 token: the mean lands within 0.05 % of the row's
        assert mean == pytest.approx(published, rel=5e-4), (name, side)


def test_the_generator_draws_the_summed_mean() -> None:
    """The exact sum above describes what the workload generator draws (200,000 draws: the
    mean's standard error is under 0.3 token)."""
    spec = _tenant_lengths("en_g7_vllm_32b_h100_output")["prefill"]
    drawn = draw_lengths(spec, 200_000, np.random.default_rng(7))
    expected = clipped_mean(spec.median, spec.sigma, spec.min, spec.max)
    assert float(np.mean(drawn)) == pytest.approx(expected, abs=1.5)
    assert int(drawn.min()) >= spec.min and int(drawn.max()) <= spec.max


def test_clipped_mean_by_hand() -> None:
    """A case small enough to sum by hand: median 2, sigma 1, clipped to [1, 3]. round(X) = 1
    below 1.5, 2 on [1.5, 2.5), 3 from 2.5 on (clipped), with z = ln(x / 2)."""
    p_low = _normal_cdf(math.log(1.5 / 2))
    p_high = 1.0 - _normal_cdf(math.log(2.5 / 2))
    by_hand = 1 * p_low + 2 * (1 - p_low - p_high) + 3 * p_high
    assert clipped_mean(2.0, 1.0, 1, 3) == pytest.approx(by_hand, rel=1e-12)
    # the numbers: Phi(-0.2877) = 0.3868, 1 - Phi(0.2231) = 0.4117
    assert by_hand == pytest.approx(0.3868 + 2 * 0.2015 + 3 * 0.4117, abs=1e-3)


def test_sigmas_are_the_azure_conversation_traces() -> None:
    """The log-scale sigmas come from the Azure LLM inference trace 2023 (conversation):
    the standard deviation of the log of its context and generated token counts."""
    if not AZURE_CONV.is_file():
        pytest.skip("shared trace data is not present")
    rows = np.genfromtxt(AZURE_CONV, delimiter=",", skip_header=1, usecols=(1, 2))
    lengths = _tenant_lengths("en_g7_vllm_32b_h100_output")
    for column, side in ((0, "prefill"), (1, "decode")):
        tokens = rows[:, column]
        sigma = float(np.std(np.log(tokens[tokens > 0])))
        assert lengths[side].sigma == pytest.approx(sigma, abs=0.006), side
