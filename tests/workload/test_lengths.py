"""Token-length distributions: means, medians, clipping, PMFs, joint trace draws, validation.

Draws are 200k per check at fixed seeds; each tolerance is stated with the standard error it
covers. Trace draws use a stand-in reader (the real reader is covered by its own tests) and,
when the shared data folder is present, the real Azure 2023 conversation trace.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import TypeAdapter

from simsched.config.loading import validate
from simsched.config.specs import LengthSpec
from simsched.errors import InputError
from simsched.workload.lengths import draw_lengths, draw_token_lengths, lognormal_params

SPEC = TypeAdapter(LengthSpec)
N = 200_000
AZURE_CONV = (
    Path(__file__).resolve().parents[2].parent / "shared/data/traces/azure_llm_2023_conv.csv"
)


def draw(raw: Any, count: int = N, seed: int = 3) -> np.ndarray:
    return draw_lengths(SPEC.validate_python(raw), count, np.random.default_rng(seed))


def pair(prefill: Any, decode: Any, count: int = N, seed: int = 3) -> tuple[np.ndarray, ...]:
    specs = SPEC.validate_python(prefill), SPEC.validate_python(decode)
    return draw_token_lengths(*specs, count, np.random.default_rng(seed))


# --- distributions ------------------------------------------------------------------------


def test_fixed_lengths_are_used_as_given() -> None:
    np.testing.assert_array_equal(draw(300, 4), [300, 300, 300, 300])
    np.testing.assert_array_equal(draw(0, 3), [0, 0, 0])  # e.g. decode_tokens: 0
    assert draw(7, 2).dtype == np.int64


@pytest.mark.parametrize(
    ("raw", "mean", "tolerance"),
    [
        # uniform on 10..90: sd 23, standard error of the mean 0.1 %
        ({"dist": "uniform", "low": 10, "high": 90}, 50.0, 0.01),
        # normal 500 +- 100: standard error 0.05 %; mass below 1 is nil
        ({"dist": "normal", "mean": 500, "std": 100}, 500.0, 0.01),
        # lognormal with mean 400, sd 300: standard error 0.17 %
        ({"dist": "lognormal", "mean": 400, "std": 300}, 400.0, 0.015),
        # exponential mean 200: standard error 0.22 %; rounding and the floor at 1 move it 0.01 %
        ({"dist": "exponential", "mean": 200}, 200.0, 0.015),
    ],
    ids=lambda v: v["dist"] if isinstance(v, dict) else "",
)
def test_distribution_means(raw: dict[str, Any], mean: float, tolerance: float) -> None:
    values = draw(raw)
    assert values.dtype == np.int64 and values.min() >= 1
    assert abs(values.mean() / mean - 1) < tolerance


def test_lognormal_std_of_the_mean_std_form() -> None:
    # sd of the sample sd: about 1 % for this lognormal (kurtosis ~ 11) at 200k; allow 5 %
    values = draw({"dist": "lognormal", "mean": 400, "std": 300})
    assert abs(values.std() / 300 - 1) < 0.05


def test_lognormal_median_form() -> None:
    # median 300, sigma 1: the sample median's standard error is about 0.35 %
    values = draw({"dist": "lognormal", "median": 300, "sigma": 1.0})
    assert abs(np.median(values) / 300 - 1) < 0.015
    assert abs(np.log(values).std() - 1.0) < 0.02  # log-scale sd, barely touched by rounding


def test_uniform_covers_both_ends() -> None:
    values = draw({"dist": "uniform", "low": 3, "high": 6})
    assert set(np.unique(values)) == {3, 4, 5, 6}


def test_clipping_to_min_max() -> None:
    values = draw({"dist": "normal", "mean": 100, "std": 200, "min": 50, "max": 120})
    assert values.min() == 50 and values.max() == 120
    # P(X < 50) = P(Z < -0.25) = 0.401 for N(100, 200): the clipped share, within 4 sd (0.4 %)
    assert abs(np.mean(values == 50) - 0.401) < 0.005


def test_every_draw_is_at_least_one() -> None:
    # Most of N(2, 20) lies below 1, and an empirical value 0 too: all become 1.
    assert draw({"dist": "normal", "mean": 2, "std": 20}).min() == 1
    assert draw({"dist": "empirical", "values": [0, 5], "weights": [1, 1]}).min() == 1
    assert draw({"dist": "uniform", "low": 0, "high": 2, "min": 1}).min() == 1


def test_empirical_pmf_frequencies() -> None:
    # Unnormalized weights 1:2:7; each frequency's standard error is at most 0.1 %.
    values = draw({"dist": "empirical", "values": [10, 20, 30], "weights": [1, 2, 7]})
    shares = [np.mean(values == v) for v in (10, 20, 30)]
    np.testing.assert_allclose(shares, [0.1, 0.2, 0.7], atol=0.005)


def test_same_seed_same_draws_and_sides_are_independent_streams() -> None:
    prefill = {"dist": "lognormal", "median": 300, "sigma": 1.0}
    first = pair(prefill, {"dist": "exponential", "mean": 50})
    again = pair(prefill, {"dist": "exponential", "mean": 50})
    other_decode = pair(prefill, {"dist": "uniform", "low": 1, "high": 9})
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    np.testing.assert_array_equal(first[0], other_decode[0])  # prefill untouched
    assert not np.array_equal(first[0], pair(prefill, 1, seed=4)[0])


# --- trace draws --------------------------------------------------------------------------


@pytest.fixture
def fake_trace(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """A stand-in reader: row i holds (i + 1, 1000 * (i + 1)), so a pair shows its row."""
    formats = pytest.importorskip("simsched.workload.formats")
    calls: list[tuple[str, str]] = []

    def read_length_pairs(path: str, format: str) -> tuple[np.ndarray, np.ndarray]:
        calls.append((path, format))
        rows = np.arange(1, 501, dtype=np.int64)
        return rows, 1000 * rows

    monkeypatch.setattr(formats, "read_length_pairs", read_length_pairs)
    return calls


def test_joint_trace_draws_keep_pairs_together(fake_trace: list) -> None:
    spec = {"dist": "trace", "path": "t.csv", "format": "csv"}
    prefill, decode = pair(spec, spec)
    np.testing.assert_array_equal(decode, 1000 * prefill)
    assert len(np.unique(prefill)) == 500  # rows are drawn with replacement from all 500
    assert fake_trace[0] == ("t.csv", "csv")


def test_clipping_applies_per_side_of_a_joint_draw(fake_trace: list) -> None:
    spec = {"dist": "trace", "path": "t.csv", "format": "csv"}
    prefill, decode = pair({**spec, "max": 100}, {**spec, "min": 20_000})
    assert prefill.max() == 100 and decode.min() == 20_000
    kept = (prefill < 100) & (decode > 20_000)
    np.testing.assert_array_equal(decode[kept], 1000 * prefill[kept])


def test_different_traces_draw_independent_rows(fake_trace: list) -> None:
    prefill, decode = pair(
        {"dist": "trace", "path": "a.csv", "format": "csv"},
        {"dist": "trace", "path": "b.csv", "format": "csv"},
    )
    # Independent rows match by chance 1 time in 500.
    assert np.mean(decode == 1000 * prefill) < 0.01


def test_one_trace_side_draws_its_own_column(fake_trace: list) -> None:
    spec = {"dist": "trace", "path": "t.csv", "format": "mooncake"}
    prefill, decode = pair(50, spec)
    assert set(np.unique(prefill)) == {50}
    assert np.all(decode % 1000 == 0) and decode.min() >= 1000


def test_empty_trace_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    formats = pytest.importorskip("simsched.workload.formats")
    empty = np.empty(0, dtype=np.int64)
    monkeypatch.setattr(formats, "read_length_pairs", lambda path, format: (empty, empty))
    with pytest.raises(InputError, match="no requests"):
        draw({"dist": "trace", "path": "e.csv", "format": "csv"}, 5)


def test_real_azure_trace_pairs() -> None:
    formats = pytest.importorskip("simsched.workload.formats")
    if not AZURE_CONV.is_file():
        pytest.skip("shared trace data is not present")
    trace_prefill, trace_decode = formats.read_length_pairs(str(AZURE_CONV), "azure2023")
    spec = {"dist": "trace", "path": str(AZURE_CONV), "format": "azure2023"}
    prefill, decode = pair(spec, spec)
    recorded = set(zip(trace_prefill.tolist(), trace_decode.tolist(), strict=True))
    assert set(zip(prefill.tolist(), decode.tolist(), strict=True)) <= recorded
    # Resampling the 19,366 rows: the mean's standard error is about 0.2 % (prefill sd ~800).
    assert abs(prefill.mean() / trace_prefill.mean() - 1) < 0.01
    # The correlation (about -0.11) survives only if pairs stay together; sd ~0.002.
    expected = np.corrcoef(trace_prefill, trace_decode)[0, 1]
    assert abs(np.corrcoef(prefill, decode)[0, 1] - expected) < 0.01


# --- validation ---------------------------------------------------------------------------


def scenario_with(prefill: Any) -> dict[str, Any]:
    arrivals = {"kind": "poisson", "rate_per_s": 1, "count": 1}
    tenant = {"id": "t", "arrivals": arrivals, "prefill_tokens": prefill, "decode_tokens": 1}
    return {"name": "x", "tenants": [tenant]}


@pytest.mark.parametrize(
    ("prefill", "where", "message"),
    [
        ({"dist": "gaussian", "mean": 3}, "", "unknown dist 'gaussian' (known: uniform"),
        ({"mean": 3}, "", "a whole number of tokens or a mapping with dist"),
        (-3, "", "greater than or equal to 0"),
        (12.5, "", "fractional part"),
        (True, "", "a whole number of tokens"),
        ({"dist": "uniform", "low": 9, "high": 2}, "", "high must not be less than low"),
        ({"dist": "normal", "mean": 9, "std": -1}, ".std", "greater than or equal to 0"),
        ({"dist": "exponential", "mean": 0}, ".mean", "greater than 0"),
        ({"dist": "exponential", "mean": 5, "min": 9, "max": 3}, "", "max must not be less"),
        ({"dist": "exponential", "mean": 5, "min": 0}, ".min", "greater than or equal to 1"),
        ({"dist": "exponential", "mean": 5, "sd": 1}, ".sd", "unknown key"),
        ({"dist": "lognormal", "mean": 3, "std": 1, "median": 2}, "", "either mean and std"),
        ({"dist": "lognormal", "median": 2}, "", "sigma is required with median"),
        ({"dist": "lognormal"}, "", "either mean and std, or median and sigma"),
        ({"dist": "empirical", "values": [], "weights": []}, ".values", "at least 1 item"),
        ({"dist": "empirical", "values": [1, 2], "weights": [0, 0]}, ".weights", "positive sum"),
        ({"dist": "empirical", "values": [1], "weights": [-1]}, ".weights[0]", "greater than"),
        ({"dist": "empirical", "values": [1, 2], "weights": [1]}, "", "same length"),
        ({"dist": "trace", "path": "x.csv", "format": "tsv"}, ".format", "'csv', 'azure2023'"),
        ({"dist": "trace", "format": "csv"}, ".path", "Field required"),
    ],
)
def test_bad_lengths_name_the_field(prefill: Any, where: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        validate(scenario_with(prefill), "x.yaml")
    assert caught.value.where == f"tenants[0].prefill_tokens{where}"
    assert message in caught.value.message


def test_lognormal_parameters_match_their_definitions() -> None:
    # mean/std form: the lengths' own mean and sd; median/sigma form: exp(mu) and the log-sd.
    mu, sigma = lognormal_params(
        SPEC.validate_python({"dist": "lognormal", "mean": 400, "std": 300})
    )
    assert math.exp(mu + sigma**2 / 2) == pytest.approx(400)
    assert math.sqrt(math.expm1(sigma**2)) * 400 == pytest.approx(300)
    spec = SPEC.validate_python({"dist": "lognormal", "median": 250, "sigma": 0.8})
    assert lognormal_params(spec) == pytest.approx((math.log(250), 0.8))
