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
