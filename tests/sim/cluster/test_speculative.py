"""Speculative decoding: expected tokens, the credit rule, a step's cost and whole runs."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from simsched.config.loading import load_scenario
from simsched.config.speculative import SpeculativeSpec, expected_tokens, rate_for_length
from simsched.results.simulate import simulate
from simsched.sim.cluster.speculative import steps_for
from tests.sim.cluster.test_roofline_physics import write_scenario


def test_expected_tokens_by_hand() -> None:
    assert expected_tokens(0.5, 3) == 1 + 0.5 + 0.25 + 0.125
    assert expected_tokens(0.0, 4) == 1.0  # nothing accepted: the target's own token
    assert expected_tokens(1.0, 4) == 5.0  # everything accepted, plus the bonus token


def test_expected_tokens_match_a_brute_force_over_acceptance_patterns() -> None:
    # each draft accepted with probability a until the first rejection; k = 3, a = 0.7
    a, k = 0.7, 3
    mean = 0.0
    for pattern in itertools.product([True, False], repeat=k):
        p = math.prod(a if ok else 1 - a for ok in pattern)
        accepted = next((i for i, ok in enumerate(pattern) if not ok), k)
        mean += p * (accepted + 1)
    assert expected_tokens(a, k) == pytest.approx(mean, rel=1e-12)


def test_acceptance_length_solves_for_the_rate() -> None:
    assert rate_for_length(1.875, 3) == pytest.approx(0.5, abs=1e-12)
    # SD-T3 (S-TRT-B1): MTP 3 with acceptance 2.82 tokens per step
    spec = SpeculativeSpec(method="mtp", tokens=3, acceptance_length=2.82)
    assert expected_tokens(spec.rate, 3) == pytest.approx(2.82, abs=1e-12)


def test_the_credit_rule_by_hand() -> None:
    # E = 1.875: after j steps floor(1.875 j) tokens: 1, 3, 5, 7, 9, 11
    assert [steps_for(r, 1.875) for r in (1, 2, 3, 9, 10, 11, 12)] == [1, 2, 2, 5, 6, 6, 7]
    assert steps_for(7, 1.0) == 7  # no speculation: one token a step


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{method: eagle, tokens: 3}", "exactly one of acceptance"),
        ("{method: eagle, tokens: 3, acceptance: 0.5, acceptance_length: 2}", "exactly one"),
        ("{method: mtp, tokens: 1, acceptance_length: 2.5}", "exceeds tokens + 1"),
        ("{method: draft_model, tokens: 4, acceptance: 0.6}", "needs drafter_share"),
        ("{method: medusa, tokens: 4, acceptance: 0.6}", "method"),
        # MTP drafts with the checkpoint's own module, which this dense model does not ship
        (
            "{method: mtp, tokens: 2, acceptance: 0.7}",
            "speculative.method: mtp drafts with the model's multi-token-prediction module, "
            "and model 'llama-3.1-8b' has none",
        ),
    ],
)
def test_bad_speculative_settings_exit_2_naming_the_field(
    spec: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from simsched.cli.app import main

    write_scenario(tmp_path, f"{CLUSTER}\n  speculative: {spec}", request(11))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", ["simsched", "validate", "s.yaml"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1
    assert "cluster.speculative" in err and message in err


# 10 ms per iteration plus 1 ms per token through the model; no scheduling step, no front end
CLUSTER = """  service_model: continuous_batching
  schedule_step_ms: 0
  latency_model: {kind: linear, base_ms: 10, prefill_ms_per_token: 0, decode_ms_per_seq: 1}"""


def request(decode: int, count: int = 1, interval_ms: float = 1) -> str:
    return f"""  - id: a
    arrivals: {{kind: periodic, interval_ms: {interval_ms}, count: {count}}}
    prefill_tokens: 100
    decode_tokens: {decode}"""


def test_one_request_takes_the_credit_rules_steps(tmp_path: Path) -> None:
    # n-gram (no drafter cost), k = 3, a = 0.5: E = 1.875. 11 tokens: the prefill's first, then
    # 10 in 6 verification steps of 10 + 4 x 1 ms (4 verified tokens): 10 + 84 = 94 ms.
    spec = "\n  speculative: {method: ngram, tokens: 3, acceptance: 0.5}"
    frame = simulate(load_scenario(write_scenario(tmp_path, CLUSTER + spec, request(11)))).requests
    assert frame["ttft_ms"][0] == 10.0
    assert frame["e2e_ms"][0] == 10.0 + 6 * 14.0
    plain = simulate(load_scenario(write_scenario(tmp_path, CLUSTER, request(11)))).requests
    assert plain["e2e_ms"][0] == 10.0 + 10 * 11.0  # one token a step: 10 steps of 11 ms
    assert frame["decode_tokens"][0] == plain["decode_tokens"][0] == 11


def test_the_drafter_adds_its_share_of_a_decode_step(tmp_path: Path) -> None:
    # EAGLE with drafter_share 0.5 and k = 3: each step adds 3 x 0.5 x (10 + 1) ms = 16.5 ms
    spec = "\n  speculative: {method: eagle, tokens: 3, acceptance: 0.5, drafter_share: 0.5}"
    frame = simulate(load_scenario(write_scenario(tmp_path, CLUSTER + spec, request(11)))).requests
    assert frame["e2e_ms"][0] == pytest.approx(10.0 + 6 * (14.0 + 16.5), abs=1e-9)


def test_low_load_gains_and_high_load_loses(tmp_path: Path) -> None:
    # k = 4 at a = 0.6 (E = 2.31) on the calibrated roofline (Llama 3 8B, H100): one sequence
    # is weight-bound, so verifying 5 tokens costs about what 1 does and TPOT falls; 256
    # sequences at once are compute-bound, so 5x the tokens cost more than 2.31x fewer steps
    roofline = "  service_model: continuous_batching\n  max_num_batched_tokens: 8192"
    spec = "\n  speculative: {method: eagle, tokens: 4, acceptance: 0.6}"

    def mean_e2e(cluster: str, count: int) -> float:
        path = write_scenario(tmp_path, cluster, request(200, count, interval_ms=0.001))
        return float(simulate(load_scenario(path)).requests["e2e_ms"].mean())

    assert mean_e2e(roofline + spec, 1) < 0.7 * mean_e2e(roofline, 1)
    assert mean_e2e(roofline + spec, 256) > mean_e2e(roofline, 256)


def test_spec_runs_release_every_block_and_ignore_fast_forward(tmp_path: Path) -> None:
    # a small cache (preemptions) and many requests: both modes give the same frame
    cluster = CLUSTER + "\n  num_gpu_blocks: 60\n  speculative: {method: eagle, tokens: 2, "
    cluster += "acceptance_length: 2.4}"
    path = write_scenario(tmp_path, cluster, request(150, count=40, interval_ms=5))
    result = simulate(load_scenario(path))
    on = result.requests
    off = simulate(load_scenario(path, ["cluster.fast_forward=false"])).requests
    assert on.equals(off)
    assert (on["decode_tokens"] == 150).all() and on["e2e_ms"].notna().all()
    assert on["preemptions"].sum() > 0  # the case exercises preemption mid-decode
    timeline = result.timeline
    assert (timeline["kv_blocks_used"] <= timeline["kv_blocks_total"]).all()
    assert timeline["kv_blocks_used"].iloc[-1] == 0  # every block back once all finished


NGRAM = "\n  speculative: {method: ngram, tokens: 2, acceptance: 0.7}"


@pytest.mark.parametrize("spec", ["", NGRAM])
def test_a_preempted_decode_recomputes_what_it_emitted_and_resumes_after_it(
    spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # recompute preemption (replica.py): the sequence prefills its prompt and the tokens it has
    # generated again, then goes on from there; it must not start its output over
    from simsched.sim.cluster.replica import Replica
    from simsched.sim.cluster.sequences import DecodeSet

    seen: list[tuple[int, int, int]] = []  # (tokens it held, tokens to recompute, tokens left)
    preempt = Replica._preempt_newest

    def watched(self: Replica, it: int) -> None:
        seq = self.running[next(reversed(self.running))]
        held = None
        if seq.finish >= 0:  # decoding: its tokens as the iteration `it` would see them
            decoding = self.decoding
            held = it + seq.off if type(decoding) is DecodeSet else decoding.tokens(seq, it)
        preempt(self, it)
        if held is not None:
            seen.append((held, seq.target, seq.decode - seq.generated))

    monkeypatch.setattr(Replica, "_preempt_newest", watched)
    cluster = CLUSTER + "\n  num_gpu_blocks: 60" + spec
    path = write_scenario(tmp_path, cluster, request(150, count=40, interval_ms=5))
    frame = simulate(load_scenario(path)).requests
    assert (frame["decode_tokens"] == 150).all() and frame["e2e_ms"].notna().all()
    assert seen  # preemptions mid-decode happened
    for held, target, left in seen:
        assert target == held  # the prompt (100) and every token emitted so far
        assert left == 150 - (held - 100)  # what is still to come, not the whole output
