"""docs/model.md states the one KV watermark rule with a worked example; the gate agrees."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from simsched.config.classes import BATCH, INTERACTIVE
from simsched.config.scenario import Admission
from simsched.sim.kv_gate import KvGate
from simsched.sim.requests import Request

MODEL_DOC = Path(__file__).resolve().parents[2] / "docs" / "model.md"


class Cluster:
    kv_blocks_total = 1000

    def kv_blocks_in_use(self) -> int:
        return 300

    def fits(self, request) -> bool:
        return True


class Lanes:
    def queued_kv_blocks(self, lane: int) -> int:
        return {INTERACTIVE: 100, BATCH: 200}[lane]


def example_lines() -> dict[str, tuple[float, str, float | None]]:
    """The worked example's lines: point -> (occupancy, verdict, recorded figure)."""
    section = MODEL_DOC.read_text(encoding="utf-8").split("### The KV watermark rule", 1)[1]
    found = {}
    pattern = (
        r"^- (at [a-z -]+): \(.*\) / 1000 = ([0-9.]+) (?:>|<=) [0-9.]+: "
        r"([^,]+)(?:, recorded as ([0-9.]+))?"
    )
    for point, occupancy, verdict, recorded in re.findall(pattern, section, flags=re.M):
        found[point] = (float(occupancy), verdict.strip(), float(recorded) if recorded else None)
    return found


def gate(class_blind: bool) -> KvGate:
    admission = Admission(interactive_kv_watermark=0.8, batch_kv_watermark=0.6)
    return KvGate(admission, Cluster(), Lanes(), class_blind)


def batch_request() -> Request:
    return Request(0, 0, BATCH, 0.0, 100, 10, 10, 50)


def test_the_doc_states_the_worked_example() -> None:
    assert set(example_lines()) == {
        "at arrival",
        "at dispatch",
        "at dispatch under a class-blind policy",
    }


def test_the_gate_computes_what_the_doc_says() -> None:
    lines = example_lines()
    request = batch_request()
    assert request.kv_blocks == 50
    occupancy, verdict, recorded = lines["at arrival"]
    arrival = gate(False).arrival_occupancy(request)
    assert arrival == pytest.approx(occupancy)
    assert gate(False).over_at_arrival(arrival, BATCH) == (verdict == "shed")
    assert gate(False).recorded_at_arrival(arrival, BATCH) == pytest.approx(recorded)
    for point, blind in (("at dispatch", False), ("at dispatch under a class-blind policy", True)):
        occupancy, verdict, recorded = lines[point]
        dispatch = gate(blind).dispatch_occupancy(request)
        assert dispatch == pytest.approx(occupancy)
        assert gate(blind).blocks_dispatch(dispatch, request) == (verdict == "shed")
        assert recorded is None or dispatch == pytest.approx(recorded)
