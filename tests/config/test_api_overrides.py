"""Issue 21 item 4: `Scenario.with_overrides` validates as `--set` does. Every bad value is an
`InputError` naming the setting, and every relative path (trace.path, model.hf_config, in
variants too) resolves against the scenario's folder, never the working folder."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.config.loading import load_scenario, resolve_variants
from simsched.errors import InputError

REPO = Path(__file__).resolve().parents[2]
ROW = "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens\n"
SHAPE = {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
         "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256,
         "torch_dtype": "bfloat16", "model_type": "llama"}  # fmt: skip


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The noisy-neighbor study in `tmp/study/`, with a trace and an hf_config beside it; the
    working folder is `tmp/elsewhere/`, which holds files of the same names with other content."""
    folder = tmp_path / "study"
    for place, prefill in ((folder, 100), (tmp_path / "elsewhere", 999)):
        place.mkdir()
        (place / "t.csv").write_text(ROW + f"r1,tenant_chat_pro,0,{prefill},10\n", "utf-8")
        (place / "config.json").write_text(json.dumps(SHAPE | {"num_hidden_layers": prefill}))
    (folder / "s.yaml").write_text((REPO / "scenarios" / "noisy_neighbor.yaml").read_text())
    monkeypatch.chdir(tmp_path / "elsewhere")
    return folder


BAD_VALUES = {
    "an object": {"seed": object()},
    "a set": {"seed": {1, 2}},
    "bytes": {"name": b"x"},
    "NaN": {"tenants.0.weight": math.nan},
    "infinity": {"tenants.0.weight": math.inf},
    "a complex number": {"seed": 1j},
    "a path that is a number": {3: 1},
    "a list holding a number": ["seed=1", 3],
    "a list holding None": [None],
    "a list holding a list": [["seed", 1]],
    "one text": "seed=1",
    "a number": 5,
    "a circular list": None,  # built below: JSON cannot write it
    "a string weight": {"tenants.0.weight": "3"},
}


@pytest.mark.parametrize("name", list(BAD_VALUES))
def test_every_bad_value_is_an_input_error(name: str, study: Path) -> None:
    overrides = BAD_VALUES[name]
    if overrides is None:
        loop: list = []
        loop.append(loop)
        overrides = {"tenants.0.weight": loop}
    scenario = load_scenario(study / "s.yaml")
    with pytest.raises(InputError) as info:
        scenario.with_overrides(overrides)
    assert str(info.value).startswith("noisy_neighbor: "), str(info.value)
    assert "\n" not in str(info.value)


@settings(max_examples=10, deadline=None)
@given(
    value=st.one_of(
        st.builds(object),
        st.binary(max_size=4),
        st.complex_numbers(allow_nan=False, allow_infinity=False),
        st.frozensets(st.integers(), max_size=2),
        st.sampled_from([math.nan, math.inf, -math.inf]),
    ),
    path=st.sampled_from(["seed", "tenants.0.weight", "cluster.total_kv_blocks", "name"]),
)
def test_values_json_cannot_write_are_input_errors(value, path) -> None:
    scenario = load_scenario(REPO / "scenarios" / "noisy_neighbor.yaml")
    with pytest.raises(InputError) as info:
        scenario.with_overrides({path: value})
    assert info.value.where == f"with_overrides {path}"
    with pytest.raises(InputError):
        scenario.with_overrides([f"{path}=1", value])


def test_a_trace_path_resolves_against_the_scenario_folder_as_set_does(study: Path) -> None:
    by_api = load_scenario(study / "s.yaml").with_overrides({"trace.path": "t.csv"})
    by_set = load_scenario(study / "s.yaml", ["trace.path=t.csv"])
    assert by_api.trace.path == by_set.trace.path == str(study / "t.csv")
    # and again from the scenario it made, as a list of assignments
    again = by_api.with_overrides(["trace.path=t.csv", "seed=3"])
    assert again.trace.path == str(study / "t.csv")


def test_a_variant_hf_config_resolves_against_the_scenario_folder(study: Path) -> None:
    cluster = {"service_model": "continuous_batching", "replicas": 1}
    variant = {"name": "mine", "set": {"cluster.model.hf_config": "config.json"}}
    for scenario in (
        load_scenario(study / "s.yaml").with_overrides({"cluster": cluster, "variants": [variant]}),
        load_scenario(
            study / "s.yaml",
            [f"cluster={json.dumps(cluster)}", f"variants={json.dumps([variant])}"],
        ),  # fmt: skip
    ):
        assert scenario.variants[0].set["cluster.model.hf_config"] == str(study / "config.json")
    # in the file itself: the study's config (100 layers), not the working folder's (999)
    raw = yaml.safe_load((study / "s.yaml").read_text())
    raw["variants"] = [{"name": "mine", "set": {"cluster": cluster} | variant["set"]}]
    (study / "v.yaml").write_text(yaml.safe_dump(raw))
    resolved = dict(resolve_variants(load_scenario(study / "v.yaml")))
    assert resolved["mine"].cluster.model.layers == 100


@pytest.mark.parametrize("weight", ["3", True, "1e3", None, [3]])
def test_router_scorer_weights_are_strict_numbers(weight) -> None:
    scenario = load_scenario(REPO / "scenarios" / "chat_sessions.yaml")
    router = {"scorers": [{"name": "queue_depth", "weight": weight}]}
    with pytest.raises(InputError, match=r"scorers\.0\.weight"):
        scenario.with_overrides({"cluster.router": router})


@pytest.mark.parametrize("weight", [3, 2.5])
def test_router_scorer_weights_take_numbers(weight) -> None:
    scenario = load_scenario(REPO / "scenarios" / "chat_sessions.yaml")
    router = {"scorers": [{"name": "queue_depth", "weight": weight}]}
    assert (
        scenario.with_overrides({"cluster.router": router}).cluster.router.scorers[0].weight
        == weight
    )
