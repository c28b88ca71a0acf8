"""One suite, run over every registered service model: the contract in `contract.ServiceModel`.

Each model runs the noisy neighbor's requests (admission on and off) and must: follow the
protocol (every member, with the protocol's parameters), give every request one outcome and
finish every admitted one, record no first token before dispatch, report a sustained rate equal
to what it computes from its settings alone, and end idle. docs/architecture.md's contract table
must name exactly the protocol's members.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest
import simpy
import yaml

from simsched.config.cluster import SERVICE_MODEL_NAMES
from simsched.config.loading import validate
from simsched.config.scenario import Timeline
from simsched.results.frames import admitted
from simsched.results.simulate import simulate
from simsched.sim.cluster.contract import LatencyModel, ServiceModel
from simsched.sim.cluster.latency import build_latency
from simsched.sim.cluster.registry import SERVICE_MODELS, sustained_tokens_per_ms
from simsched.sim.engine import run_variant
from simsched.sim.recorder import Recorder
from simsched.workload.build import build_workload

REPO = Path(__file__).resolve().parents[3]
NOISY = REPO / "scenarios" / "noisy_neighbor.yaml"
NAMES = sorted(SERVICE_MODELS)


def scenario_for(name: str, admission: bool = True):
    """The noisy neighbor's tenants and requests on the model's default cluster."""
    raw = yaml.safe_load(NOISY.read_text(encoding="utf-8"))
    cluster = {"service_model": name}
    if name == "pools":  # a P/D pair: the model has no default layout
        cluster |= {"pools": [{"name": "p", "role": "prefill"}, {"name": "d", "role": "decode"}]}
    raw |= {"cluster": cluster, "variants": []}
    raw["admission"] = raw.get("admission", {}) | {"enabled": admission}
    return validate(raw, str(NOISY))


@pytest.fixture(scope="module", params=NAMES)
def model_name(request) -> str:
    return request.param


def test_every_model_has_every_protocol_member_with_its_parameters(model_name):
    cls = SERVICE_MODELS[model_name]
    for name, member in vars(ServiceModel).items():
        if name.startswith("_") and name != "__init__" or not callable(member):
            continue
        mine = getattr(cls, name, None)
        assert mine is not None, f"{model_name} lacks {name}"
        wanted = list(inspect.signature(member).parameters)
        got = list(inspect.signature(mine).parameters)
        assert got[: len(wanted)] == wanted, f"{model_name}.{name}{got} != {wanted}"


def test_a_built_model_is_a_service_model(model_name):
    scenario = scenario_for(model_name)
    model = SERVICE_MODELS[model_name](simpy.Environment(), scenario.cluster, Recorder(0, {}))
    assert isinstance(model, ServiceModel)
    assert model.kv_blocks_total > 0 and model.kv_blocks_in_use() == 0
    assert model.tput == pytest.approx(sustained_tokens_per_ms(scenario.cluster))
    assert model.is_idle() and model.has_room()
    assert all(len(row) == 5 for row in model.snapshot())


@pytest.mark.parametrize("admission", [True, False])
def test_every_request_one_outcome_and_every_admitted_one_finishes(model_name, admission):
    result = simulate(scenario_for(model_name, admission))
    rows = result.requests
    assert len(rows) == rows["request_id"].nunique() == 60
    served = rows[admitted(rows)]
    assert len(served) > 0
    assert np.isfinite(served["finish_ms"]).all() and np.isfinite(served["first_token_ms"]).all()
    assert (served["first_token_ms"] >= served["dispatch_ms"]).all()
    assert (served["finish_ms"] >= served["first_token_ms"]).all()
    assert (served["dispatch_ms"] >= served["arrival_ms"]).all()


def test_every_model_ends_idle_with_no_kv_held(model_name, monkeypatch):
    built = []

    class Watched(SERVICE_MODELS[model_name]):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built.append(self)

    monkeypatch.setitem(SERVICE_MODELS, model_name, Watched)
    scenario = scenario_for(model_name).model_copy(update={"timeline": Timeline(enabled=False)})
    table = build_workload(scenario)
    run_variant(scenario, table)
    (model,) = built
    assert model.is_idle() and model.kv_blocks_in_use() == 0


def test_the_registry_and_the_scenario_format_name_the_same_models():
    assert set(SERVICE_MODELS) == set(SERVICE_MODEL_NAMES)


@pytest.mark.parametrize("kind", ["linear", "roofline"])
def test_latency_models_follow_the_protocol_and_agree_in_bulk(kind):
    latency_model = {"kind": kind}
    if kind == "linear":
        latency_model |= {"base_ms": 1.5, "prefill_ms_per_token": 0.03, "decode_ms_per_seq": 0.2}
    raw = {
        "tenants": [
            {
                "id": "a",
                "prefill_tokens": 1,
                "decode_tokens": 1,
                "arrivals": {"kind": "periodic", "interval_ms": 1, "count": 1},
            }
        ],
        "cluster": {"service_model": "continuous_batching", "latency_model": latency_model},
    }
    latency = build_latency(validate(raw, "x.yaml").cluster)
    assert isinstance(latency, LatencyModel)
    contexts = np.array([0, 17, 4096, 100_000], dtype=np.int64)
    bulk = latency.iteration_ms(0, 0, 0, 8, contexts, np.maximum)
    one_by_one = [latency.iteration_ms(0, 0, 0, 8, int(c)) for c in contexts]
    assert bulk.tolist() == one_by_one  # bit for bit: fast-forward relies on it


def test_the_docs_contract_table_names_the_protocol_members():
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("### The service-model contract", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+)", section, flags=re.M))
    members = {
        name
        for name in {*vars(ServiceModel), *ServiceModel.__annotations__}
        if not name.startswith("_")
    }
    assert documented == members
