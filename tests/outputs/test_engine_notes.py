"""The table note when variants run on different engines (outputs/engine_notes.py)."""

from __future__ import annotations

from types import SimpleNamespace

from simsched.config.engines import EngineSpec
from simsched.outputs.engine_notes import engine_notes


def variant(engine: str | None, offline: bool = False, pools: list | None = None):
    spec = None if engine is None else EngineSpec(name=engine, offline=offline)
    return SimpleNamespace(cluster=SimpleNamespace(engine=spec, pools=pools))


def test_one_engine_for_every_variant_needs_no_note():
    resolved = {"a": variant("sglang"), "b": variant("sglang")}
    assert engine_notes(resolved, ["a", "b"]) == []
    assert engine_notes({"a": variant(None)}, ["a"]) == []


def test_variants_on_different_engines_are_named_and_warned():
    resolved = {"v": variant("vllm"), "s": variant("sglang"), "d": variant(None)}
    (note,) = engine_notes(resolved, ["v", "s", "d"])
    assert note.startswith("engines compared (v: vllm, s: sglang, d: default): ")
    assert "unvalidated" in note and "29.3%" in note


def test_offline_use_and_pools_count_as_their_own_engines():
    pools = [SimpleNamespace(engine=EngineSpec(name="trtllm")), SimpleNamespace(engine=None)]
    resolved = {"served": variant("vllm"), "offline": variant("vllm", offline=True)}
    resolved["pooled"] = variant(None, pools=pools)
    (note,) = engine_notes(resolved, ["served", "offline", "pooled"])
    assert "(served: vllm, offline: vllm offline, pooled: default+trtllm)" in note


def test_a_label_that_says_its_engine_is_not_repeated():
    resolved = {"vllm": variant("vllm"), "cluster.engine=sglang": variant("sglang")}
    (note,) = engine_notes(resolved, ["vllm", "cluster.engine=sglang"])
    assert note.startswith("engines compared (vllm, cluster.engine=sglang): ")


def test_written_batching_limits_that_hide_a_profiles_are_said():
    # vLLM V1 serves with 8192 tokens and 1024 sequences on an H100, TensorRT-LLM with 8192 and
    # 2048, SGLang keeps simsched's own: a scenario's written 2048 / 256 runs all three at 2048 /
    # 256, so the comparison is not of the engines' own limits
    from simsched.config.loading import validate

    def cluster(engine: str, **limits: int):
        raw = {
            "name": "t",
            "tenants": [{"id": "a", "arrivals": {"kind": "periodic", "interval_ms": 1, "count": 1},
                         "prefill_tokens": 1, "decode_tokens": 1}],
            "cluster": {"service_model": "continuous_batching", "engine": engine, **limits},
        }  # fmt: skip
        return validate(raw, "t")

    written = {"max_num_batched_tokens": 2048, "max_num_seqs": 256}
    resolved = {e: cluster(e, **written) for e in ("vllm", "sglang", "trtllm")}
    _, hidden = engine_notes(resolved, list(resolved))
    assert "vllm runs 2048 tokens and 256 sequences, not its profile's 8192 / 1024" in hidden
    assert "trtllm runs 2048 tokens and 256 sequences, not its profile's 8192 / 2048" in hidden
    assert "sglang" not in hidden.split(" (written values")[0]
    # left out, each engine runs its own: one note only
    own = {e: cluster(e) for e in ("vllm", "sglang", "trtllm")}
    assert len(engine_notes(own, list(own))) == 1
    # a renamed A100 (2048 / 256 for vLLM, read from the preset name as written) is no H100:
    # its validated name no longer says which, so no claim is made of it
    renamed = {"preset": "a100-80gb", "name": "my-gpu"}
    own = {e: cluster(e, gpu=renamed) for e in ("vllm", "sglang")}
    assert len(engine_notes(own, list(own))) == 1
    # an H100 given 40 GiB is a small GPU to vLLM (2048 / 256): its own limits, no note
    small = {"preset": "h100-80gb", "memory_gib": 40}
    own = {e: cluster(e, gpu=small) for e in ("vllm", "sglang")}
    assert own["vllm"].cluster.max_num_batched_tokens == 2048
    assert len(engine_notes(own, list(own))) == 1
