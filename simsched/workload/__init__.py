"""Workloads: where requests come from, and the SimPy process that delivers them."""

from __future__ import annotations

from simsched.workload.build import build_workload
from simsched.workload.table import RequestTable

__all__ = ["RequestTable", "build_workload"]
