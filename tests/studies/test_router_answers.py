"""A capacity answer a planner can trust: the default router (llm-d's default weights, with
simsched's queue scorer) gives the same answer as `least_outstanding`, within one replica, and
no worse than either that or `least_kv`, whose blind spot (waiting requests hold no blocks)
piles work onto one replica.

The study is tests/data/three_tenant_study.yaml: chat with a shared system prompt, a bursty IDE
tenant (gamma, cv 3) and batch RAG on Llama 3 8B, p99 TTFT <= 800 ms, A100 against H100.
"""

from __future__ import annotations

from pathlib import Path

from simsched.studies.plan import plan

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "tests" / "data" / "three_tenant_study.yaml"
GPUS = {"cluster.gpu": ["a100-80gb", "h100-80gb"]}


def answer(router: str):
    fleet = plan(
        STUDY,
        "cluster.replicas",
        "3:10",
        ["interactive.p99_ttft_ms<=800"],
        over=GPUS,
        minimize="cost",
        overrides=[f"cluster.router={router}"],
        headroom=False,
    )
    return fleet.best


def test_the_default_router_answers_as_least_outstanding_and_no_worse() -> None:
    default, outstanding, least_kv = (answer(r) for r in ("llm_d", "least_outstanding", "least_kv"))
    assert default.combo == outstanding.combo
    assert abs(default.answer - outstanding.answer) <= 1
    assert default.cost_per_hour <= min(outstanding.cost_per_hour, least_kv.cost_per_hour)


FLEET_PLANNING = REPO / "scenarios" / "fleet_planning.yaml"


def readme_answer(router: str):
    """The README's `fleet_planning` example (three seeds), under `router`."""
    fleet = plan(
        FLEET_PLANNING,
        "cluster.replicas",
        "1:8",
        ["interactive.p99_ttft_ms<=500"],
        over=GPUS,
        minimize="cost",
        seeds=3,
        overrides=[f"cluster.router={router}"],
        headroom=False,
    )
    return fleet.best


def test_the_readme_example_answers_alike_under_the_default_router_and_least_outstanding():
    default, outstanding = readme_answer("llm_d"), readme_answer("least_outstanding")
    assert default.combo == outstanding.combo
    assert abs(default.answer - outstanding.answer) <= 1
    assert default.cost_per_hour <= outstanding.cost_per_hour


def test_plan_notes_a_router_the_docs_warn_about(tmp_path) -> None:
    path = tmp_path / "small.yaml"
    path.write_text(
        "tenants:\n"
        "  - id: a\n"
        "    arrivals: {kind: periodic, interval_ms: 50, count: 20}\n"
        "    prefill_tokens: 100\n"
        "    decode_tokens: 10\n"
        "cluster: {service_model: continuous_batching}\n"
    )
    slos = ["a.p99_ttft_ms<=5000"]
    warned = plan(path, "cluster.replicas", "1:2", slos, overrides=["cluster.router=least_kv"],
                  headroom=False)  # fmt: skip
    assert any(n.startswith("cluster.router=least_kv: waiting requests") for n in warned.notes)
    plain = plan(path, "cluster.replicas", "1:2", slos, headroom=False)
    assert not any(n.startswith("cluster.router=") for n in plain.notes)
