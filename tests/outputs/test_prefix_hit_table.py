"""The console comparison table shows the prefix hit rate when some variant caches prefixes."""

from __future__ import annotations

import json

from simsched.config.loading import validate
from simsched.outputs.tables import comparison_table
from simsched.results.simulate import simulate


def scenario(tmp_path, variants: list[dict]):
    rows = [(0, 1000, [1, 2]), (5000, 1000, [1, 2])]
    lines = [
        json.dumps({"timestamp": t, "input_length": n, "output_length": 5, "hash_ids": h})
        for t, n, h in rows
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    tenant = {"id": "t", "trace": {"path": str(path), "format": "mooncake"}}
    cluster = {"service_model": "continuous_batching", "prefix_caching": True}
    raw = {"tenants": [tenant], "cluster": cluster, "admission": {"enabled": False}}
    return validate(raw | {"variants": variants}, "x.yaml")


def hit_lines(table: str) -> list[str]:
    return [line for line in table.splitlines() if "prefix hit rate" in line]


def test_a_hit_rate_row_overall_and_per_tenant_when_a_variant_caches(tmp_path) -> None:
    variants = [{"name": "cache"}, {"name": "plain", "set": {"cluster.prefix_caching": False}}]
    table = comparison_table(simulate(scenario(tmp_path, variants)))
    lines = hit_lines(table)
    assert len(lines) == 2  # all tenants, then tenant t
    # the second request finds 62 of its 1000 prompt tokens' blocks: 992 / 2000 tokens
    for line in lines:
        assert line.split()[-2:] == ["0.4960", "off"]


def test_no_hit_rate_row_without_caching(tmp_path) -> None:
    variants = [{"name": "plain", "set": {"cluster.prefix_caching": False}}]
    assert hit_lines(comparison_table(simulate(scenario(tmp_path, variants)))) == []
