"""Make a setting's path reachable in a scenario that writes a tagged section in short form,
or that splits its cluster into pools.

Scenarios may write `latency_model: roofline` (the bare name) or leave `latency_model` out
(the roofline with its defaults). A dotted path such as `cluster.latency_model.overhead_ms`
cannot be set under a string or create a section without its `kind`, so before a case's
overrides we set such a section to its long form, `{kind: <name>}`, which means the same.

A pooled scenario (`cluster.pools`) has no per-replica settings at the cluster's top level: each
pool carries its own. A calibrated `cluster.X` is a cost of every replica (a GPU efficiency, the
CPU time of an iteration), so there it means every pool's `X`: `cluster.pools[i].X` for each
pool the scenario file declares (`per_pool`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from simsched.config.overrides import format_assignment, get_path, split_path
from simsched.config.yaml_io import MAX_SCENARIO_BYTES, parse_yaml_mapping, read_text
from simsched.errors import InputError

# tagged sections with a short form, and the kind they mean when left out
DEFAULT_KIND = {"latency_model": "roofline"}
# a pooled cluster's own keys (config/pools.py, PooledClusterConfig); every other cluster key
# belongs to a pool
POOLED_CLUSTER_KEYS = frozenset({"service_model", "pools", "kv_transfer"})


def per_pool(scenario: Path, path: str) -> list[str]:
    """The paths a setting's `path` stands for in `scenario`: `cluster.X` once per pool when the
    scenario declares `cluster.pools`, else `path` itself."""
    segments = _segments(path)
    if len(segments) < 2 or segments[0] != "cluster" or segments[1] in POOLED_CLUSTER_KEYS:
        return [path]
    pools = _pools(scenario)
    if not pools:
        return [path]
    rest = path.strip()[len("cluster.") :]
    return [f"cluster.pools[{i}].{rest}" for i in range(len(pools))]


def cluster_path(path: str) -> str:
    """`per_pool`'s inverse: a pool's copy of a cluster path (`cluster.pools[0].X`, or
    `cluster.pools.0.X` as a flag may write it) as the cluster's `cluster.X`; any other path as
    it is."""
    return re.sub(r"^cluster\.pools(\[[^\]]*\]|\.[^.]+)\.", "cluster.", path)


def _segments(path: str) -> list[str]:
    try:
        return split_path(path)
    except ValueError:
        return []  # malformed: the override itself reports it


def _pools(scenario: Path) -> list[Any]:
    try:
        raw = parse_yaml_mapping(read_text(scenario, "scenario", MAX_SCENARIO_BYTES), str(scenario))
    except InputError:
        return []  # loading the scenario reports it, naming the case
    cluster = raw.get("cluster")
    pools = cluster.get("pools") if isinstance(cluster, dict) else None
    return pools if isinstance(pools, list) else []


def long_forms(scenario: Path, paths: list[str]) -> list[str]:
    """The overrides that write the tagged sections on `paths` in long form (usually none)."""
    try:
        raw = parse_yaml_mapping(read_text(scenario, "scenario", MAX_SCENARIO_BYTES), str(scenario))
    except InputError:
        return []  # loading the scenario reports it, naming the case
    out: list[str] = []
    for path in paths:
        try:
            segments = split_path(path)
        except ValueError:
            continue  # malformed: the override itself reports it
        for depth, segment in enumerate(segments[:-1]):
            if segment not in DEFAULT_KIND:
                continue
            prefix = ".".join(segments[: depth + 1])
            long = _long_form(raw, prefix, DEFAULT_KIND[segment])
            if long is not None and long not in out:
                out.append(long)
    return out


def _long_form(raw: dict[str, Any], prefix: str, default: str) -> str | None:
    try:
        value = get_path(raw, prefix)
    except (LookupError, ValueError, TypeError):
        value = None  # left out: the default kind
    if value is None:
        return format_assignment(prefix, {"kind": default})
    if isinstance(value, str):
        return format_assignment(prefix, {"kind": value})
    return None
