"""A request longer than the model's context is refused before the run (workload/context_limits).

The limits are the models' config.json `max_position_embeddings`, transcribed here from the
measurement collection's architecture tables (README.md §6 "Max ctx", moe_specdec_pd.md §1h
AR-1..AR-9) and, for the three presets those tables do not list, from the models' config.json
files (Llama-2-13B, Qwen3-32B, Mistral-7B-v0.3). Every count and longest length in the messages
below is worked out by hand from the scenario written in the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simsched.config import presets
from simsched.config.loading import load_scenario
from simsched.errors import InputError
from simsched.results.simulate import simulate

CONTEXTS = {
    "llama-2-7b": 4096,
    "llama-2-13b": 4096,
    "llama-2-70b": 4096,
    "llama-3-8b": 8192,
    "llama-3-70b": 8192,
    "llama-3.1-8b": 131072,
    "llama-3.1-70b": 131072,
    "llama-3.3-70b": 131072,
    "llama-3.1-405b": 131072,
    "qwen3-8b": 40960,
    "qwen3-14b": 40960,
    "qwen3-32b": 40960,
    "mistral-7b": 32768,
    "deepseek-v3": 163840,
    "deepseek-r1": 163840,
    "qwen3-30b-a3b": 40960,
    "qwen3-235b-a22b": 40960,
    "mixtral-8x7b": 32768,
    "mixtral-8x22b": 65536,
    "llama-4-scout": 10485760,
    "llama-4-maverick": 1048576,
    "gpt-oss-120b": 131072,
    "gpt-oss-20b": 131072,
}


def test_every_preset_carries_its_config_context() -> None:
    assert {
        name: p.get("max_position_embeddings") for name, p in presets.MODEL_PRESETS.items()
    } == (CONTEXTS)


def test_the_default_model_is_llama_3_8b_shape_with_llama_3_1_context() -> None:
    # the default moved from llama-3-8b to llama-3.1-8b: the same shape (so every figure is the
    # same), with the 131,072-token context served models have, not Llama 3's 8,192
    from simsched.config.batching import ContinuousBatchingConfig

    model = ContinuousBatchingConfig(service_model="continuous_batching").model
    assert model.name == "llama-3.1-8b"
    shape = {k: v for k, v in presets.MODEL_PRESETS["llama-3-8b"].items()}
    assert {k: v for k, v in model.model_dump().items() if k in shape and k != "name"} == {
        **shape,
        "max_position_embeddings": 131072,
    }


# --- refusals --------------------------------------------------------------------------------


def _scenario(tmp_path: Path, tenants: list[dict], cluster: dict | None = None, **extra) -> Path:
    raw = {
        "name": "ctx",
        "seed": 3,
        "tenants": tenants,
        "cluster": {"service_model": "continuous_batching", "model": "llama-3-8b"}
        | (cluster or {}),
        "admission": {"enabled": False},
        **extra,
    }
    path = tmp_path / "ctx.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def _fixed(prefill: int, decode: int, count: int = 3, tenant: str = "t") -> dict:
    return {
        "id": tenant,
        "arrivals": {"kind": "periodic", "interval_ms": 1000, "count": count},
        "prefill_tokens": prefill,
        "decode_tokens": decode,
    }


def _sessions(start: dict, turns, prefill, decode, **extra) -> dict:
    """Tenant 'chat': multi-turn sessions started by `start`, `turns` each."""
    arrivals = {"kind": "sessions", "start": start, "turns": turns} | extra.pop("arrivals", {})
    return {
        "id": "chat",
        "arrivals": arrivals,
        "prefill_tokens": prefill,
        "decode_tokens": decode,
        **extra,
    }


def _refusal(path: Path, overrides: list[str] | None = None) -> str:
    with pytest.raises(InputError) as info:
        simulate(load_scenario(path, overrides or []))
    message = str(info.value)
    assert "\n" not in message
    return message


def test_fixed_lengths_over_the_context_are_refused_and_at_it_run(tmp_path: Path) -> None:
    # 8,000 + 193 = 8,193 tokens: one over Llama 3 8B's 8,192, all 3 requests
    message = _refusal(_scenario(tmp_path, [_fixed(8000, 193)]))
    assert message.startswith(
        "tenants[0].prefill_tokens: 3 of the 3 requests of tenant 't' reach more tokens than "
        "model 'llama-3-8b' serves, 8,192 (prompt and output together; the longest 8,193), "
        "which a served engine refuses: shorten them, or serve a model with a longer context "
        "(model: {preset: llama-3-8b, max_position_embeddings: N}"
    )
    # 8,000 + 192 = 8,192: exactly the context, served
    result = simulate(load_scenario(_scenario(tmp_path, [_fixed(8000, 192)])))
    assert len(result.requests) == 3


def test_the_system_prompt_counts_and_the_tenant_is_named(tmp_path: Path) -> None:
    # the second tenant: 4,000 + a 4,000-token system prompt + 200 = 8,200 > 8,192
    short = _fixed(100, 10, tenant="short")
    long = _fixed(4000, 200, count=5, tenant="long") | {"prefix": {"tokens": 4000}}
    message = _refusal(_scenario(tmp_path, [short, long]))
    assert message.startswith("tenants[1]: 5 of the 5 requests of tenant 'long' reach more")
    assert "(prompt and output, with the prefix's 4,000 tokens; the longest 8,200)" in message


def test_a_trace_names_its_setting_and_counts_its_long_rows(tmp_path: Path) -> None:
    rows = [(374, 44), (8000, 500), (100, 100), (9000, 10), (8100, 92)]  # 8,500 and 9,010 over
    trace = tmp_path / "t.csv"
    trace.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        + "".join(f"2023-11-16 18:15:{10 + i:02d}.0,{p},{d}\n" for i, (p, d) in enumerate(rows)),
        encoding="utf-8",
    )
    tenant = {"id": "replay", "trace": {"path": str(trace), "format": "azure2023"}}
    message = _refusal(_scenario(tmp_path, [tenant]))
    assert message.startswith("tenants[0].trace: 2 of the 5 requests of tenant 'replay'")
    assert "the longest 9,010" in message


def test_sessions_are_checked_on_their_last_turn(tmp_path: Path) -> None:
    # every session: a 1,000-token system prompt, then 3 turns of 1,000 + 1,000: its last turn
    # sends 1,000 + 2 x 2,000 + 1,000 = 6,000 prompt tokens and answers 1,000: 7,000 in all
    start = {"kind": "periodic", "interval_ms": 1000, "count": 4}
    thinking = {"think_time_ms": 10}
    tenant = _sessions(start, 3, 1000, 1000, arrivals=thinking, prefix={"tokens": 1000})
    model = {"preset": "llama-3-8b", "max_position_embeddings": 6999}
    message = _refusal(_scenario(tmp_path, [tenant], {"model": model}))
    assert message.startswith("tenants[0]: 4 of the 4 sessions of tenant 'chat' reach more")
    assert "serves, 6,999 (a turn's prompt carries the conversation so far" in message
    assert "the longest 7,000)" in message
    model["max_position_embeddings"] = 7000
    result = simulate(load_scenario(_scenario(tmp_path, [tenant], {"model": model})))
    assert len(result.requests) == 12


def test_closed_loop_clients_count_their_shared_file(tmp_path: Path) -> None:
    tenant = {
        "id": "ide",
        "arrivals": {"kind": "closed_loop", "concurrency": 2, "count": 6},
        "prefill_tokens": 500,
        "decode_tokens": 100,
        "prefix": {"tokens": 7600, "groups": 2},  # 7,600 + 500 + 100 = 8,200
    }
    message = _refusal(_scenario(tmp_path, [tenant]))
    assert message.startswith("tenants[0]: 6 of the 6 requests of tenant 'ide' reach more")
    assert "the prefix's 7,600 tokens; the longest 8,200)" in message


def test_a_variant_serving_a_shorter_context_is_named(tmp_path: Path) -> None:
    variants = [
        {"name": "long", "set": {"cluster.model": "llama-3.1-8b"}},
        {"name": "short", "set": {"cluster.model": "llama-2-7b"}},
    ]
    path = _scenario(tmp_path, [_fixed(5000, 100)], {"model": "llama-3.1-8b"}, variants=variants)
    message = _refusal(path)
    assert message.startswith("variant 'short': tenants[0].prefill_tokens: 3 of the 3 requests")
    assert (
        "than model 'llama-2-7b' serves, 4,096 (prompt and output together; the longest 5,100)"
        in (message)
    )
    # the scenario's own problem is not blamed on a variant
    cached = [{"name": "cached", "set": {"cluster.prefix_caching": True}}]
    own = _scenario(tmp_path, [_fixed(9000, 100)], variants=cached)
    assert _refusal(own).startswith("tenants[0].prefill_tokens: 3 of the 3 requests")


def test_a_model_without_a_context_is_not_checked(tmp_path: Path) -> None:
    shape = {k: v for k, v in presets.MODEL_PRESETS["llama-3-8b"].items()}
    del shape["max_position_embeddings"]
    path = _scenario(tmp_path, [_fixed(20000, 10, count=1)], {"model": shape})
    assert len(simulate(load_scenario(path)).requests) == 1
    # and a mapping on a preset may lift it, as a deployment with RoPE scaling would
    lifted = {"preset": "llama-3-8b", "max_position_embeddings": 32768}
    path = _scenario(tmp_path, [_fixed(20000, 10, count=1)], {"model": lifted})
    assert len(simulate(load_scenario(path)).requests) == 1


def test_pools_limit_each_tenant_by_the_pools_that_may_serve_it(tmp_path: Path) -> None:
    long_model = {"preset": "llama-3-8b", "max_position_embeddings": 65536}
    pools = [
        {"name": "short", "role": "mixed", "replicas": 1, "model": "llama-3-8b"},
        {"name": "long", "role": "mixed", "replicas": 1, "model": long_model},
    ]
    cluster = {"service_model": "pools", "pools": pools}
    confined = _fixed(20000, 100) | {"pools": ["long"]}
    path = _scenario(tmp_path, [confined], cluster)
    raw = yaml.safe_load(path.read_text())
    raw["cluster"] = cluster  # no single-pool keys beside the pools
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert len(simulate(load_scenario(path)).requests) == 3
    # free to use either pool, the shorter context bounds it
    raw["tenants"][0].pop("pools")
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    message = _refusal(path)
    assert "than model 'llama-3-8b' (pool 'short') serves, 8,192 (" in message
    assert "the longest 20,100)" in message


def test_the_cli_exits_2_with_one_line_and_writes_nothing(tmp_path: Path, simsched_cli) -> None:
    path = _scenario(tmp_path, [_fixed(8000, 193)])
    out = tmp_path / "out"
    code, stdout, err = simsched_cli("scenario", path, "--out", out)
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith(f"{path}: tenants[0].prefill_tokens: 3 of the 3 requests")
    assert "Traceback" not in stdout + err
    assert not out.exists()
    code, _, err = simsched_cli("validate", path)
    assert code == 2 and "model 'llama-3-8b' serves, 8,192" in err


# --- config.json import ----------------------------------------------------------------------


def _config(tmp_path: Path, raw: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return str(path)


DENSE = {
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "intermediate_size": 14336,
    "vocab_size": 128256,
}


def test_a_config_json_gives_its_context(tmp_path: Path) -> None:
    path = _config(tmp_path, DENSE | {"max_position_embeddings": 131072})
    assert presets.from_hf_config(path)["max_position_embeddings"] == 131072
    assert "max_position_embeddings" not in presets.from_hf_config(_config(tmp_path, DENSE))


@pytest.mark.parametrize("bad", [0, -1, 4096.5, "8k", True])
def test_a_bad_context_in_a_config_json_names_the_file_and_field(tmp_path, bad) -> None:
    path = _config(tmp_path, DENSE | {"max_position_embeddings": bad})
    with pytest.raises(ValueError, match="max_position_embeddings must be a whole number"):
        presets.from_hf_config(path)


def test_an_moe_configs_context_is_read_under_its_text_config_too(tmp_path: Path) -> None:
    from tests.config.test_moe_presets import GPT_OSS_120B, SCOUT  # their config.json fields

    text = SCOUT["text_config"] | {"max_position_embeddings": 10485760}  # AR-6
    path = _config(tmp_path, SCOUT | {"text_config": text})
    assert presets.from_hf_config(path)["max_position_embeddings"] == 10485760
    path = _config(tmp_path, GPT_OSS_120B | {"max_position_embeddings": 131072})  # AR-8
    assert presets.from_hf_config(path)["max_position_embeddings"] == 131072
    path = _config(tmp_path, GPT_OSS_120B | {"max_position_embeddings": 2.5})
    with pytest.raises(ValueError, match="max_position_embeddings must be a whole number"):
        presets.from_hf_config(path)


# vLLM's rule (vllm/config/model.py, `_get_and_verify_max_len`): a RoPE scaling other than
# llama3 / LongRoPE multiplies the context by its factor, YaRN's from its original length
@pytest.mark.parametrize(
    ("context", "rope", "served"),
    [
        (40960, None, 40960),  # Qwen3 as published
        (40960, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
         131072),  # Qwen3 with YaRN turned on, as its model card says: 32,768 x 4
        (131072, {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096},
         131072),  # gpt-oss: 4,096 x 32, its own max_position_embeddings
        (163840, {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096},
         163840),  # DeepSeek-V3 (the older `type` key): 4,096 x 40
        (131072, {"rope_type": "llama3", "factor": 8.0}, 131072),  # Llama 3.1: already scaled
        (4096, {"type": "linear", "factor": 2.0}, 8192),  # a linear scaling: 4,096 x 2
        # transformers v5 keys rope_parameters by layer type: one factor for them all
        (40960, {"full_attention": {"rope_type": "yarn", "factor": 4.0,
                                    "original_max_position_embeddings": 32768},
                 "sliding_attention": {"rope_type": "default"}}, 131072),
    ],
)  # fmt: skip
def test_a_rope_scaling_stretches_the_context_as_vllm_derives_it(tmp_path, context, rope, served):
    raw = DENSE | {"max_position_embeddings": context}
    if rope is not None:
        key = "rope_parameters" if "full_attention" in rope else "rope_scaling"
        raw[key] = rope
    assert presets.from_hf_config(_config(tmp_path, raw))["max_position_embeddings"] == served


def test_a_bad_rope_factor_names_the_field(tmp_path: Path) -> None:
    raw = DENSE | {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 0}}
    with pytest.raises(ValueError, match=r"rope_scaling\.factor must be a number above 0"):
        presets.from_hf_config(_config(tmp_path, raw))


def test_every_overrunning_tenant_is_counted_and_the_first_declared_is_named(tmp_path) -> None:
    # tenants[0] (sessions, drawn apart from the table) and tenants[2] overrun, tenants[1] not:
    # the first in the scenario's order is named, the other counted
    start = {"kind": "periodic", "interval_ms": 1000, "count": 2}
    chat = _sessions(start, 5, 1000, 1000, arrivals={"think_time_ms": 10})  # 5 x 2,000 > 8,192
    tenants = [chat, _fixed(100, 10, tenant="fine"), _fixed(9000, 1, count=1, tenant="big")]
    message = _refusal(_scenario(tmp_path, tenants))
    assert message.startswith("tenants[0]: 2 of the 2 sessions of tenant 'chat' reach more")
    assert "which a served engine refuses; 1 other tenant too: shorten them" in message
    # one request over: the verb agrees
    assert "1 of the 1 requests of tenant 'big' reaches more" in _refusal(
        _scenario(tmp_path, tenants[1:])
    )


def test_a_model_that_is_no_preset_is_told_to_set_its_own_context(tmp_path: Path) -> None:
    shape = {k: v for k, v in presets.MODEL_PRESETS["llama-3-8b"].items()} | {"name": "mine"}
    message = _refusal(_scenario(tmp_path, [_fixed(9000, 1)], {"model": shape}))
    assert "than model 'mine' serves, 8,192" in message
    assert "(the model's max_position_embeddings: N, N your deployment's --max-model-len)" in (
        message
    )


# --- plans -----------------------------------------------------------------------------------


def test_a_plan_over_models_shows_a_model_the_workload_overruns_as_invalid(tmp_path) -> None:
    from simsched.studies.plan import plan

    # 5,000 + 100 tokens: over Llama 2's 4,096, within Llama 3.1's 131,072
    path = _scenario(tmp_path, [_fixed(5000, 100, count=4)], {"model": "llama-3.1-8b"})
    result = plan(
        path,
        "cluster.replicas",
        "1:2",
        ["all.shed<=100"],
        over={"cluster.model": ["llama-2-7b", "llama-3.1-8b"]},
        headroom=False,
    )
    rows = {dict(r.combo)["cluster.model"]: r for r in result.plans}
    assert rows["llama-2-7b"].answer is None
    assert "4 of the 4 requests of tenant 't' reach more tokens than model 'llama-2-7b' serves, " \
        "4,096" in rows["llama-2-7b"].error  # fmt: skip
    assert rows["llama-3.1-8b"].answer == 1
    assert result.best is rows["llama-3.1-8b"]


def test_a_plan_whose_every_model_is_overrun_exits_2_naming_it(tmp_path, simsched_cli) -> None:
    path = _scenario(tmp_path, [_fixed(5000, 100, count=4)])  # llama-3-8b holds 5,100 tokens
    args = ["plan", path, "--vary", "cluster.replicas", "--range", "1:2", "--slo", "all.shed<=100"]
    code, _, err = simsched_cli(*args, "--set", "cluster.model=llama-2-7b")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"{path}: --vary cluster.replicas=1: tenants[0].prefill_tokens: 4 of"), (
        err
    )
    # Llama 2 7B and 13B both serve 4,096 tokens: no combination can run
    code, _, err = simsched_cli(*args, "--over", "cluster.model=llama-2-7b,llama-2-13b")
    assert code == 2 and err.count("\n") == 1
    assert f"{path}: --over cluster.model=llama-2-7b, --vary cluster.replicas=1: tenants[0]" in err


# --- the correctness review's cases ----------------------------------------------------------


def test_closed_loop_clients_that_stop_at_a_duration_are_checked_as_they_send(tmp_path) -> None:
    # 100 planned requests of 9,000 + 100, but the clients stop after 1 s: they are checked as
    # they go, and the first one sent (at 0 s) is refused with its length
    clients = {
        "id": "ide",
        "arrivals": {"kind": "closed_loop", "concurrency": 1, "count": 100, "duration_s": 1},
        "prefill_tokens": 9000,
        "decode_tokens": 100,
    }
    message = _refusal(_scenario(tmp_path, [clients]))
    assert message.startswith(
        "tenants[0].prefill_tokens: a request the closed-loop clients of tenant 'ide' sent at "
        "0.000 s has 9,100 tokens, more than model 'llama-3-8b' serves, 8,192"
    )
    # planned requests it never sends are not refused: 1 s holds 1 request of 9,000 tokens on
    # one replica only if it is short enough, so here every request fits and it runs
    clients |= {"prefill_tokens": 8000, "decode_tokens": 192}
    assert len(simulate(load_scenario(_scenario(tmp_path, [clients]))).requests) >= 1


def test_a_variant_changing_another_tenant_is_not_blamed(tmp_path: Path) -> None:
    variants = [{"name": "more_batch", "set": {"tenants.b.decode_tokens": 50}}]
    tenants = [_fixed(9000, 10, tenant="chat"), _fixed(100, 10, tenant="b")]
    message = _refusal(_scenario(tmp_path, tenants, variants=variants))
    assert message.startswith("tenants[0].prefill_tokens: 3 of the 3 requests of tenant 'chat'")
    # a variant that lengthens the prompts is to blame
    longer = [{"name": "longer", "set": {"tenants.chat.prefill_tokens": 9000}}]
    tenants[0] = _fixed(100, 10, tenant="chat")
    message = _refusal(_scenario(tmp_path, tenants, variants=longer))
    assert message.startswith("variant 'longer': tenants[0].prefill_tokens: 3 of the 3")


def test_every_variant_is_checked_before_the_first_runs(tmp_path: Path) -> None:
    variants = [
        {"name": "fine", "set": {"cluster.model": "llama-3.1-8b"}},
        {"name": "short", "set": {"cluster.model": "llama-2-7b"}},
    ]
    ran: list[str] = []
    path = _scenario(tmp_path, [_fixed(5000, 100)], variants=variants)
    with pytest.raises(InputError, match="variant 'short'"):
        simulate(load_scenario(path), progress=lambda name, done, total: ran.append(name))
    assert ran == []


def test_the_first_declared_tenant_is_named_whatever_arrives_first(tmp_path: Path) -> None:
    late = _fixed(9000, 1, tenant="late") | {
        "arrivals": {"kind": "periodic", "start_ms": 5000, "interval_ms": 1000, "count": 1}
    }
    early = _fixed(9000, 1, tenant="early")  # arrives at 0, declared second
    message = _refusal(_scenario(tmp_path, [late, early]))
    assert message.startswith("tenants[0].prefill_tokens: 1 of the 1 requests of tenant 'late'")
    assert "; 1 other tenant too" in message


def test_the_scenarios_trace_is_named(tmp_path: Path) -> None:
    (tmp_path / "r.csv").write_text(
        "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens\n"
        "a-1,agent,10,600,120\na-2,agent,20,8100,100\na-3,agent,30,100,10\n",
        encoding="utf-8",
    )
    path = _scenario(tmp_path, [{"id": "agent"}], trace={"path": "r.csv"})
    message = _refusal(path)
    assert message.startswith("trace: 1 of the 3 requests of tenant 'agent' reaches more")
    assert "the longest 8,200)" in message


def test_load_scale_draws_the_sessions_the_run_sends(tmp_path: Path) -> None:
    start = {"kind": "poisson", "rate_per_s": 2, "duration_s": 5}
    session = _sessions(start, 2, 4000, 100)  # 2 x 4,100 = 8,200 > 8,192: every session
    path = _scenario(tmp_path, [session])
    counts = []
    for scale in ("1", "3"):
        message = _refusal(path, [f"load_scale={scale}"])
        counts.append(int(message.split(" of the ")[1].split(" ")[0]))
    # three times the rate: about three times the sessions (Poisson counts, so not exactly)
    assert 2 * counts[0] < counts[1] < 4 * counts[0]


def test_a_decode_pool_with_a_shorter_context_limits_its_tenants(tmp_path: Path) -> None:
    short = {"preset": "llama-3.1-8b", "max_position_embeddings": 8192}
    pools = [
        {"name": "prefill", "role": "prefill", "replicas": 1, "model": "llama-3.1-8b"},
        {"name": "decode", "role": "decode", "replicas": 1, "model": short},
    ]
    raw = yaml.safe_load(_scenario(tmp_path, [_fixed(9000, 100)]).read_text())
    raw["cluster"] = {"service_model": "pools", "pools": pools}
    path = tmp_path / "pd.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    message = _refusal(path)
    assert "than model 'llama-3.1-8b' (pool 'decode') serves, 8,192 (" in message
    # a pool without a context does not lift the one that has it
    pools[1]["model"] = {"preset": "llama-3.1-8b", "max_position_embeddings": None}
    pools[0]["model"] = short
    path.write_text(yaml.safe_dump(raw | {"cluster": {"pools": pools}}), encoding="utf-8")
    assert "(pool 'prefill') serves, 8,192 (" in _refusal(path)


def test_sessions_lengths_against_a_brute_force_over_drawn_plans() -> None:
    from simsched.config.loading import validate as validate_raw
    from simsched.workload.build import prefix_rng, tenant_rng
    from simsched.workload.context_limits import session_lengths
    from simsched.workload.session_plans import session_plans

    tenant = _sessions(
        {"kind": "poisson", "rate_per_s": 5, "duration_s": 20},
        {"dist": "uniform", "low": 1, "high": 9},
        {"dist": "lognormal", "median": 300, "sigma": 0.8, "max": 5000},
        {"dist": "lognormal", "median": 200, "sigma": 0.6, "max": 3000},
        prefix={"tokens": 700, "groups": 3},
    )
    raw = {"tenants": [tenant], "cluster": {"service_model": "continuous_batching"}}
    (plan,) = session_plans(validate_raw(raw, "x.yaml"), tenant_rng, prefix_rng)
    expected = []
    for number, turns in enumerate(plan.turns.tolist()):
        first = int(plan.first_turn[number])
        total = 700 if plan.group[number] >= 0 else 0
        for turn in range(first, first + turns):  # each turn adds its message and its answer
            total += int(plan.message[turn]) + int(plan.answer[turn])
        expected.append(total)
    assert len(set(plan.turns.tolist())) > 3  # the sessions differ in length
    assert session_lengths(plan).tolist() == expected


def test_the_context_keys_vllm_reads_and_gemma_3s_own_scaling(tmp_path: Path) -> None:
    # the smallest of the keys vLLM reads; Cohere's model_max_length wins over them
    seq = presets.from_hf_config(_config(tmp_path, DENSE | {"seq_length": 2048}))
    assert seq["max_position_embeddings"] == 2048
    both = DENSE | {"max_position_embeddings": 8192, "n_positions": 4096}
    assert presets.from_hf_config(_config(tmp_path, both))["max_position_embeddings"] == 4096
    cohere = DENSE | {"max_position_embeddings": 8192, "model_max_length": 131072}
    assert presets.from_hf_config(_config(tmp_path, cohere))["max_position_embeddings"] == 131072
    # Gemma 3's 131,072 is scaled already: its linear factor 8 is not applied again
    gemma = DENSE | {"model_type": "gemma3_text", "max_position_embeddings": 131072,
                     "rope_scaling": {"rope_type": "linear", "factor": 8.0}}  # fmt: skip
    assert presets.from_hf_config(_config(tmp_path, gemma))["max_position_embeddings"] == 131072


def test_a_variant_is_named_by_its_own_model_not_the_scenarios(tmp_path: Path) -> None:
    # the scenario serves Llama 2 (4,096) and runs only its variants: the one that overruns is
    # llama3 (8,192), and the message is its own
    variants = [
        {"name": "llama31", "set": {"cluster.model": "llama-3.1-8b"}},
        {"name": "llama3", "set": {"cluster.model": "llama-3-8b"}},
    ]
    path = _scenario(tmp_path, [_fixed(9000, 100)], {"model": "llama-2-7b"}, variants=variants)
    message = _refusal(path)
    assert message.startswith("variant 'llama3': tenants[0].prefill_tokens: 3 of the 3 requests")
    assert "model 'llama-3-8b' serves, 8,192" in message


def test_a_plan_checks_every_seeds_workload_at_the_ends(tmp_path: Path) -> None:
    from simsched.studies.plan import plan

    # lengths drawn up to 4,200 tokens: some seed's few requests overrun Llama 2's 4,096
    tenant = _fixed(0, 0, count=30) | {
        "prefill_tokens": {"dist": "uniform", "low": 3000, "high": 4200},
        "decode_tokens": 50,
    }
    path = _scenario(tmp_path, [tenant], {"model": "llama-3.1-8b"})
    over = {"cluster.model": ["llama-2-7b", "llama-3.1-8b"]}
    result = plan(path, "cluster.replicas", "1:2", ["all.shed<=100"], over=over, seeds=3,
                  headroom=False)  # fmt: skip
    rows = {dict(r.combo)["cluster.model"]: r for r in result.plans}
    assert "llama-2-7b" in rows["llama-2-7b"].error and ", seed " in rows["llama-2-7b"].error
    assert rows["llama-3.1-8b"].answer == 1
