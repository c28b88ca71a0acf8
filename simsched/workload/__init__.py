"""Workloads: a scenario's requests as a `RequestTable` (numpy columns; no simulation).

`build.build_workload(scenario)` generates (arrival processes, length distributions) or reads
(trace formats) every tenant's requests and merges them in (arrival_ms, request_id) order.
"""
