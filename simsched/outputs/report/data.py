"""What a scenario report shows, from a result in memory or from a `scenario --out` folder."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.config.loading import resolve_variants
from simsched.errors import InputError
from simsched.outputs.cluster_table import table_notes
from simsched.outputs.files import REQUESTS_FILE, SUMMARY_FILE, TENANTS_FILE, TIMELINE_FILE
from simsched.outputs.report.folder_notes import folder_notes
from simsched.outputs.sweep_table import first_csv_row
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
    tpot_slo_ms: dict[str, dict[str, float]] | None = None  # variant -> class -> TPOT SLO
    description: str = ""  # shown under the title (a folder's summary.json has none)
    utilisation: dict[str, Any] | None = None  # summary.json's `utilisation`, where present
    # the console table's notes (router, skew, no backlog); from a results folder, those it
    # supports (`folder_notes`)
    notes: list[str] = field(default_factory=list)
    chargeback: dict[str, Any] | None = None  # summary.json's `chargeback`, where present
    provisioned: dict[str, Any] | None = None  # summary.json's `provisioned`, where autoscaled


def result_data(result: SimulationResult) -> ScenarioData:
    resolved = dict(resolve_variants(result.scenario))
    slo = {v: _class_slos(resolved[v].slo.model_dump()) for v in result.variants}
    tpot = {v: _class_slos(resolved[v].slo.model_dump(), "tpot") for v in result.variants}
    return ScenarioData(
        result.scenario.name,
        list(result.variants),
        result.requests,
        _tenants_only(result.tenants),
        result.timeline if len(result.timeline) else None,
        slo,
        tpot,
        result.scenario.description,
        result.utilisation,
        table_notes(result),
        chargeback=result.chargeback or None,
        provisioned=result.provisioned,
    )


def _class_slos(slo: dict[str, Any], metric: str = "ttft") -> dict[str, float]:
    return {lane: slo.get(f"{lane}_{metric}_ms") for lane in ("interactive", "batch")}


def read_results_folder(folder: Path) -> ScenarioData:
    requests = _read_csv(folder / REQUESTS_FILE, required=True)
    tenants = _read_csv(folder / TENANTS_FILE, required=True)
    timeline = _read_csv(folder / TIMELINE_FILE, required=False)
    summary = _read_summary(folder / SUMMARY_FILE)
    _check_unique(tenants, folder / TENANTS_FILE)
    variants = list(dict.fromkeys(tenants["variant"].astype(str)))
    slo = {v: {"interactive": _slo_target(summary, v, folder / SUMMARY_FILE)} for v in variants}
    title = str(summary.get("scenario", folder.name))
    usage = summary.get("utilisation")
    provisioned = summary.get("provisioned")
    return ScenarioData(
        title,
        variants,
        requests,
        _tenants_only(tenants),
        timeline,
        slo,
        utilisation=usage,
        notes=folder_notes(variants, requests, usage, provisioned),
        chargeback=summary.get("chargeback"),
        provisioned=provisioned if isinstance(provisioned, dict) else None,
    )


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
        header = first_csv_row(path)
        frame = pd.read_csv(path)
    except (ValueError, OSError, csv.Error) as exc:
        raise InputError(str(path), "", f"cannot read: {exc}") from None
    names = [name.strip() for name in header]  # pandas would rename a repeated one
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputError(str(path), "header", f"column {repeated[0]!r} is named twice")
    missing = [c for c in EXPECTED_COLUMNS.get(path.name, ()) if c not in frame.columns]
    if missing:
        raise InputError(str(path), "header", f"missing column(s): {', '.join(missing)}")
    for column in NUMERIC_COLUMNS.get(path.name, ()):
        _check_numeric(frame, column, path)
    return frame


def _check_numeric(frame: pd.DataFrame, column: str, path: Path) -> None:
    """A column the plots compute with holds numbers (or empty cells), not text."""
    if pd.api.types.is_numeric_dtype(frame[column]):
        return
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna() & frame[column].notna()
    if bad.any():
        row = int(bad.to_numpy().argmax())
        shown = frame[column].iloc[row]
        raise InputError(str(path), f"line {row + 2}", f"{column} {shown!r} is not a number")
    frame[column] = values


def _check_unique(tenants: pd.DataFrame, path: Path) -> None:
    repeated = tenants.duplicated(["variant", "tenant_id"])
    if repeated.any():
        row = int(repeated.to_numpy().argmax())
        tenant = tenants["tenant_id"].iloc[row]
        raise InputError(str(path), f"line {row + 2}", f"tenant {tenant!r} is listed twice")


def _slo_target(summary: dict[str, Any], variant: str, path: Path) -> float | None:
    slo = summary.get("slo", {})
    verdict = slo.get(variant, {}) if isinstance(slo, dict) else None
    if not isinstance(verdict, dict):
        raise InputError(str(path), "slo", "is not a mapping of variants to SLO verdicts")
    target = verdict.get("interactive_ttft_ms")
    if target is not None and not isinstance(target, (int, float)):
        raise InputError(str(path), f"slo.{variant}.interactive_ttft_ms", "is not a number")
    return target


# Columns the plots compute with: they must hold numbers.
NUMERIC_COLUMNS = {
    REQUESTS_FILE: ("status_code", "ttft_ms", "dispatch_ms"),
    TENANTS_FILE: ("weight",),
    TIMELINE_FILE: ("time_ms", "replica", "kv_blocks_used", "kv_blocks_total"),
}
# What the plots read from each file of a results folder.
EXPECTED_COLUMNS = {
    REQUESTS_FILE: ("variant", "tenant_id", "status_code", "reason", "ttft_ms", "dispatch_ms"),
    TENANTS_FILE: ("variant", "tenant_id", "weight"),
    TIMELINE_FILE: ("variant", "time_ms", "replica", "kv_blocks_used", "kv_blocks_total"),
}


def _read_summary(path: Path) -> dict[str, Any]:
    try:
        summary = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (ValueError, OSError) as exc:
        raise InputError(str(path), "", f"cannot read: {exc}") from None
    except RecursionError:  # JSON nested thousands deep: no summary simsched wrote
        raise InputError(str(path), "", "cannot read: nested too deeply") from None
    if not isinstance(summary, dict):
        raise InputError(str(path), "", "is not a JSON object (a summary written by simsched)")
    return summary
