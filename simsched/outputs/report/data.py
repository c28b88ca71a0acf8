"""What a scenario report shows, from a result in memory or from a `scenario --out` folder."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.config.loading import resolve_variants
from simsched.errors import InputError
from simsched.outputs.files import REQUESTS_FILE, SUMMARY_FILE, TENANTS_FILE, TIMELINE_FILE
from simsched.results.frames import SimulationResult
from simsched.results.tenants import ALL


@dataclass
class ScenarioData:
    """What a scenario report needs, from a result in memory or from an output folder."""

    title: str
    variants: list[str]
    requests: pd.DataFrame
    tenants: pd.DataFrame
    timeline: pd.DataFrame | None
    slo_ms: dict[str, dict[str, float]]  # variant -> class -> TTFT SLO


def result_data(result: SimulationResult) -> ScenarioData:
    resolved = dict(resolve_variants(result.scenario))
    slo = {v: _class_slos(resolved[v].slo.model_dump()) for v in result.variants}
    return ScenarioData(
        _title(result.scenario.name, result.scenario.description),
        list(result.variants),
        result.requests,
        _tenants_only(result.tenants),
        result.timeline if len(result.timeline) else None,
        slo,
    )


def _title(name: str, description: str) -> str:
    return f"{name}: {description}" if description else name


def _class_slos(slo: dict[str, Any]) -> dict[str, float]:
    return {"interactive": slo["interactive_ttft_ms"], "batch": slo.get("batch_ttft_ms")}


def read_results_folder(folder: Path) -> ScenarioData:
    requests = _read_csv(folder / REQUESTS_FILE, required=True)
    tenants = _read_csv(folder / TENANTS_FILE, required=True)
    timeline = _read_csv(folder / TIMELINE_FILE, required=False)
    summary = _read_summary(folder / SUMMARY_FILE)
    variants = list(dict.fromkeys(tenants["variant"].astype(str)))
    slo = {
        v: {"interactive": summary.get("slo", {}).get(v, {}).get("interactive_ttft_ms")}
        for v in variants
    }
    title = str(summary.get("scenario", folder.name))
    return ScenarioData(title, variants, requests, _tenants_only(tenants), timeline, slo)


def _tenants_only(tenants: pd.DataFrame) -> pd.DataFrame:
    """Plots are per tenant: the per-variant `all` row is not one."""
    return tenants[tenants["tenant_id"].astype(str) != ALL]


def _read_csv(path: Path, required: bool) -> pd.DataFrame | None:
    if not path.is_file():
        if required:
            message = f"no {path.name}: not a folder written by `simsched scenario --out`"
            raise InputError(str(path.parent), "", message)
        return None
    try:
        frame = pd.read_csv(path)
    except (ValueError, OSError) as exc:
        raise InputError(str(path), "", f"cannot read: {exc}") from None
    missing = [c for c in EXPECTED_COLUMNS.get(path.name, ()) if c not in frame.columns]
    if missing:
        raise InputError(str(path), "header", f"missing column(s): {', '.join(missing)}")
    return frame


# What the plots read from each file of a results folder.
EXPECTED_COLUMNS = {
    REQUESTS_FILE: ("variant", "tenant_id", "status_code", "reason", "ttft_ms", "dispatch_ms"),
    TENANTS_FILE: ("variant", "tenant_id", "weight"),
    TIMELINE_FILE: ("variant", "time_ms", "replica", "kv_blocks_used", "kv_blocks_total"),
}


def _read_summary(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (ValueError, OSError) as exc:
        raise InputError(str(path), "", f"cannot read: {exc}") from None
