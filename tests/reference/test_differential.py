"""simsched against the reference scheduler, request by request, on seeded random traces.

The reference (`../shared/reference/seed_scheduler.py`) is the specification of the
`token_server` model and of both reference policies. It is loaded from the shared folder when
that folder is present; otherwise this whole module is skipped. The reference is never copied
into the project.

Each case draws 1-4 tenants, a trace with ties (integer arrivals) or fractional arrivals, a
priority class per request, and random scheduler, admission and cluster parameters; both
implementations run it, and the complete decision sequences must be equal: same requests in
the same order with the same status, reason, TTFT, queue wait and occupancy.
"""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from simsched.config.scenario import Scenario

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
REFERENCE = SHARED / "reference" / "seed_scheduler.py"
STORED_COMPARISON = (
    Path(__file__).resolve().parents[2] / "tests" / "data" / "noisy_neighbor_comparison.json"
)

pytestmark = pytest.mark.skipif(
    not REFERENCE.is_file(), reason="the reference scheduler (shared folder) is not present"
)

MODES = [
    ("request_count_fifo", False),
    ("request_count_fifo", True),
    ("service_token_drr", False),
    ("service_token_drr", True),
]
SEEDS_PER_MODE = 15  # 60 cases in all


@pytest.fixture(scope="module")
def ref() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("simsched_reference_seed", REFERENCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up in sys.modules while the class bodies execute.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(spec.name, None)
        raise
    yield module
    sys.modules.pop(spec.name, None)


class Case:
    """One random study: tenants, requests and parameters, in both implementations' terms."""

    def __init__(self, ref: ModuleType, rng: random.Random, mode: str, admission: bool) -> None:
        self.mode, self.admission = mode, admission
        self.quotas = [self._quota(ref, rng, i) for i in range(rng.randint(1, 4))]
        self.fractional = rng.random() < 0.5
        # Request sizes vary by case: large ones mostly meet the KV watermark, small ones get
        # past it to the wait-SLO and quota rules and to the dispatch gate.
        self.max_prefill, self.max_decode = rng.choice([(4000, 600), (1200, 200), (400, 60)])
        self.requests = self._requests(ref, rng, rng.randint(1, 300))
        self.params = self._params(rng)

    @staticmethod
    def _quota(ref: ModuleType, rng: random.Random, index: int) -> Any:
        return ref.TenantQuota(
            tenant_id=f"t{index}",
            weight=rng.choice([0.5, 1.0, 1.5, 2.0, 3.0]),
            burst_service_tokens=rng.randint(1_000, 60_000),
            sustained_service_tokens_per_sec=rng.randint(1_000, 200_000),
            priority_class=rng.choice(["interactive", "batch"]),
        )

    def _requests(self, ref: ModuleType, rng: random.Random, count: int) -> list[Any]:
        requests, clock = [], 0.0
        for index in range(count):
            # Integer traces repeat instants often (ties broken by request_id).
            clock += rng.random() * 20 if self.fractional else rng.choice([0, 0, 1, 2, 5, 10, 30])
            quota = rng.choice(self.quotas)
            requests.append(
                ref.InferenceRequest(
                    request_id=f"r{rng.randint(0, 10**6)}-{index}",
                    tenant_id=quota.tenant_id,
                    arrival_ms=clock if self.fractional else int(clock),
                    prefill_tokens=rng.randint(1, self.max_prefill),
                    decode_tokens=rng.randint(0, self.max_decode),
                    priority_class=rng.choice(["interactive", "batch", quota.priority_class]),
                )
            )
        return requests

    @staticmethod
    def _params(rng: random.Random) -> dict[str, Any]:
        interactive = rng.choice([0.5, 0.8, 0.9, 1.0])
        return {
            "total_kv_blocks": rng.choice([200, 800, 1600]),
            "interactive_kv_watermark": interactive,
            "batch_kv_watermark": min(interactive, rng.choice([0.3, 0.5, 0.65, 0.9])),
            "max_interactive_wait_ms": rng.choice([10.0, 50.0, 420.0, 2000.0]),
            "max_batch_wait_ms": rng.choice([100.0, 500.0, 3500.0]),
            "decode_weight": rng.choice([1, 2, 4]),
            "base_quantum_tokens": rng.choice([300, 1200, 5000]),
            "cluster_service_tokens_per_ms": rng.choice([20.0, 45.0, 90.0]),
        }

    def reference_decisions(self, ref: ModuleType) -> list[tuple]:
        scheduler = ref.MultiTenantScheduler(
            self.quotas,
            scheduling_mode=self.mode,
            enable_admission_control=self.admission,
            **self.params,
        )
        return [
            (
                o.request_id,
                o.status_code,
                o.reason,
                o.ttft_ms,
                o.queue_wait_ms,
                o.kv_occupancy_ratio,
            )
            for o in scheduler.run_trace(self.requests)
        ]

    def trace_rows(self) -> list[tuple]:
        return [
            (
                r.request_id,
                r.tenant_id,
                r.arrival_ms,
                r.prefill_tokens,
                r.decode_tokens,
                r.priority_class,
            )
            for r in self.requests
        ]

    def sections(self) -> dict[str, Any]:
        """The reference's parameters as scenario keys (the cluster's other keys default to
        the reference's constants: 16-token blocks, hold 5.5, prefill 48 per ms, at least 8)."""
        p = self.params
        return {
            "cluster": {
                "total_kv_blocks": p["total_kv_blocks"],
                "service_tokens_per_ms": p["cluster_service_tokens_per_ms"],
            },
            "scheduler": {
                "policy": self.mode,
                "decode_weight": p["decode_weight"],
                "base_quantum_tokens": p["base_quantum_tokens"],
            },
            "admission": {
                "enabled": self.admission,
                "evaluate_at": "scheduler_tick",
                "interactive_kv_watermark": p["interactive_kv_watermark"],
                "batch_kv_watermark": p["batch_kv_watermark"],
                "max_interactive_wait_ms": p["max_interactive_wait_ms"],
                "max_batch_wait_ms": p["max_batch_wait_ms"],
            },
        }

    def tenants(self) -> list[dict[str, Any]]:
        return [
            {
                "id": q.tenant_id,
                "weight": q.weight,
                "priority": q.priority_class,
                "quota": {
                    "burst_service_tokens": q.burst_service_tokens,
                    "sustained_service_tokens_per_sec": q.sustained_service_tokens_per_sec,
                },
            }
            for q in self.quotas
        ]


def first_difference(got: list[tuple], want: list[tuple]) -> str:
    # Lengths may differ; the shorter list's end is reported below.
    for index, (have, expect) in enumerate(zip(got, want, strict=False)):
        if have != expect:
            return f"decision {index}: simsched {have}, reference {expect}"
    return f"simsched made {len(got)} decisions, the reference {len(want)}"


@pytest.mark.parametrize(
    ("mode", "admission", "seed"),
    [(mode, admission, seed) for mode, admission in MODES for seed in range(SEEDS_PER_MODE)],
)
def test_matches_the_reference_decision_by_decision(
    ref: ModuleType,
    make_scenario: Callable[..., Scenario],
    decisions: Callable[[Scenario], list],
    mode: str,
    admission: bool,
    seed: int,
) -> None:
    case = Case(ref, random.Random(f"{mode}-{admission}-{seed}"), mode, admission)
    want = case.reference_decisions(ref)
    scenario = make_scenario(case.trace_rows(), case.tenants(), **case.sections())
    got = [
        (d.request_id, d.status_code, d.reason, d.ttft_ms, d.queue_wait_ms, d.kv_occupancy_ratio)
        for d in decisions(scenario)
    ]
    assert got == want, first_difference(got, want)


def test_stored_comparison_is_the_reference_output(ref: ModuleType) -> None:
    # The golden test's data file must be exactly what the reference computes today.
    stored = json.loads(STORED_COMPARISON.read_text())
    assert ref.simulate_noisy_neighbor()["comparison"] == stored
