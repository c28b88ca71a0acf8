"""calibration/api_server_short_prompts.yaml judges the served profiles' API-server time on
GPUStack's short-prompt runs (measurements moe_specdec_pd.md §4; docs/engines.md, "The API
server"). Its figures must be the rows' own, its start the shipped vLLM value (so `--no-fit`
shows the shipped errors), its copy of the dense anchor published.yaml's, and none of its own
cases may leak into published.yaml."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from simsched.config.engines import VLLM_FRONTEND
from simsched.studies.calibration.spec import load_calibration

ROOT = Path(__file__).resolve().parents[2]
CASE_FILE = ROOT / "calibration" / "api_server_short_prompts.yaml"
PUBLISHED = ROOT / "calibration" / "published.yaml"
MEASUREMENTS = ROOT.parent / "shared" / "data" / "measurements" / "moe_specdec_pd.md"
ANCHOR = "as_g8_a100_128_served"


def cases() -> dict[str, dict]:
    return {case["name"]: case for case in yaml.safe_load(CASE_FILE.read_text())["cases"]}


def test_the_file_loads_and_starts_at_the_shipped_vllm_value() -> None:
    spec, measured, _ = load_calibration(CASE_FILE)
    (setting,) = spec.settings
    assert setting.initial == VLLM_FRONTEND["per_request_ms"]
    assert len(measured) == 9 and ANCHOR in setting.cases
    assert not any("sglang" in name for name in setting.cases)  # SGLang keeps its own value


def test_its_anchor_is_published_yamls_and_nothing_else_leaks_there() -> None:
    published = {c["name"]: c for c in yaml.safe_load(PUBLISHED.read_text())["cases"]}
    own = cases()
    assert own[ANCHOR] == published[ANCHOR]
    assert not (set(own) - {ANCHOR}) & set(published)


@pytest.mark.skipif(not MEASUREMENTS.exists(), reason="needs ../shared/data/measurements")
def test_each_case_is_its_rows_request_rate() -> None:
    # the §1e rows by id: | MX-G.. | section | command | random 128 / 4 | prompts | duration |
    # tokens | req/s | ...
    rows = {}
    for line in MEASUREMENTS.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) > 7 and re.fullmatch(r"MX-G\d+", cells[0]) and cells[3] == "random 128 / 4":
            rows[cells[0]] = (int(cells[4]), float(cells[7]), cells[2])
    for name, case in cases().items():
        if name == ANCHOR:
            continue
        (row,) = re.findall(r"MX-G\d+", case["source"])
        prompts, rate, command = rows[row]
        assert case["measured"] == rate, name
        # the engine and TP its command line names (no flag: TP 1), async scheduling as overlap
        engine = "sglang" if "sglang" in command else "vllm"
        assert f"cluster.engine={engine}" in case["set"], name
        tp = re.search(r"--?tp(?:-size)? (\d+)", command)
        assert (
            (f"cluster.tp={tp.group(1)}" in case["set"])
            if tp
            else not any(line.startswith("cluster.tp=") for line in case["set"])
        ), name
        assert ("--async-scheduling" in command) == ("cluster.cpu_time=overlap" in case["set"])
        assert f"tenants[0].arrivals.count={prompts}" in case["set"], name
        assert "tenants[0].prefill_tokens=128" in case["set"]
        assert "tenants[0].decode_tokens=4" in case["set"]
