"""What a plan is given, checked before any probe runs: the SLOs and the default shed guards,
the choices (`--minimize`, `--rule`, `--seeds`, `--jobs`), `--over` against the other flags and
the scenario, and a GPU price that `--over cluster.gpu` would otherwise drop."""

from __future__ import annotations

from simsched.config.overrides import format_assignment
from simsched.config.scenario import Scenario
from simsched.errors import InputError
from simsched.results.tenants import ALL
from simsched.sim.recorder import SHED_REASONS
from simsched.studies.fleet import MINIMIZE, Combo, combinations
from simsched.studies.probing import RULES
from simsched.studies.slo import Slo, check_targets, parse_slo
from simsched.workload.context_limits import ContextError

GUARD_LIMIT = 0.001
GUARD_METRIC = f"shed_rate<={GUARD_LIMIT}"
# a session tenant's guard: the shed rate counts requests (a retried turn is one more), so a
# variant whose sessions end at their first 429 would shed "less" while serving fewer users
TURN_GUARD_METRIC = f"turn_loss_rate<={GUARD_LIMIT}"
SHED_GUARD = f"all.{GUARD_METRIC}"
SHED_METRICS = frozenset(
    {"shed", "shed_rate", *SHED_REASONS, "turn_loss_rate", "sessions_cut_short"}
)


def plan_slos(
    texts: list[str], resolved: Scenario, label: str, quota_of: str | None = None
) -> tuple[list[Slo], list[str]]:
    """The SLOs and the shed guards; `quota_of`: the tenant whose quota the knob sizes (its
    own 429s are the quota's point, so no guard covers it: studies/quota_sizing.py)."""
    parsed = [parse_slo(text, label) for text in texts]
    if not parsed:
        raise InputError(label, "--slo", "give at least one SLO")
    check_targets(parsed, resolved, label)
    guards = shed_guards(parsed, resolved, quota_of)
    if not guards:
        return parsed, []
    if quota_of is not None:
        note = (
            f"the knob sizes {quota_of}'s quota, whose 429s are its point, so the plan added "
            f"{', '.join(guards)} for the other tenants only (a shed SLO of your own on them "
            "replaces these)"
        )
    elif not any(slo.metric in SHED_METRICS for slo in parsed) and session_tenants(resolved):
        note = (
            f"no SLO judges shedding, so the plan added {', '.join(guards)}: turns lost for "
            "session tenants (a shed turn whose session ended or ran out of retries), requests "
            "shed for the others; a capacity that meets the latency targets only by rejecting "
            "traffic is no answer (state a shed SLO of your own, e.g. --slo "
            "all.turn_loss_rate<=0.01, to change it)"
        )
    elif guards == [SHED_GUARD]:
        note = (
            f"no SLO judges shedding, so the plan added {SHED_GUARD}: a capacity that meets the "
            "latency targets only by rejecting traffic is no answer (state a shed SLO of your "
            "own, e.g. --slo all.shed_rate<=0.01, to change it)"
        )
    else:
        note = (
            f"the shed SLOs given cover some tenants only, so the plan added {', '.join(guards)} "
            "for the others: no tenant may shed unseen (an all.shed_rate SLO replaces them)"
        )
    return [*parsed, *map(_guard, guards)], [note]


def shed_guards(slos: list[Slo], resolved: Scenario, quota_of: str | None = None) -> list[str]:
    """The default guards against hidden shedding: none when an SLO judges `all` shedding;
    `all.shed_rate<=0.001` when no SLO judges shedding and no tenant sends sessions; else the
    same limit for each tenant that no shed SLO covers (by its id or its priority class), on
    its turn-loss rate for a session tenant and its shed rate for the others. The tenant whose
    quota a plan sizes (`quota_of`) gets none, and then neither does `all`."""
    shed = [slo for slo in slos if slo.metric in SHED_METRICS]
    if any(slo.target == ALL for slo in shed):
        return []
    sessions = session_tenants(resolved)
    if not shed and not sessions and quota_of is None:
        return [SHED_GUARD]
    targets = {slo.target for slo in shed}
    tenants = resolved.tenant_ids()
    open_ = [
        t.id
        for t in resolved.tenants
        if t.id not in targets
        and not (t.priority in targets and t.priority not in tenants)
        and t.id != quota_of
    ]
    return [
        f"{tenant}.{TURN_GUARD_METRIC if tenant in sessions else GUARD_METRIC}" for tenant in open_
    ]


def session_tenants(resolved: Scenario) -> set[str]:
    """Tenants whose users send sessions of turns (their turn-loss rate is the one to judge)."""
    return {
        tenant.id
        for tenant in resolved.tenants
        if tenant.arrivals is not None and tenant.arrivals.kind == "sessions"
    }


def _guard(text: str) -> Slo:
    # built, not parsed: a tenant id may hold characters an SLO expression cannot
    for metric in ("turn_loss_rate", "shed_rate"):
        target, found, limit = text.rpartition(f".{metric}<=")
        if found:
            return Slo(text, target, metric, "<=", float(limit))
    raise ValueError(f"not a guard: {text!r}")  # shed_guards makes only the two above


def check_choices(minimize: str, rule: str, seeds: int, jobs: int, label: str) -> None:
    if minimize not in MINIMIZE:
        raise InputError(
            label, "--minimize", f"unknown {minimize!r} (known: {', '.join(MINIMIZE)})"
        )
    if rule not in RULES:
        raise InputError(label, "--rule", f"unknown {rule!r} (known: {', '.join(RULES)})")
    for flag, value in (("--seeds", seeds), ("--jobs", jobs)):
        if value < 1:
            raise InputError(label, flag, f"must be at least 1, got {value}")


def check_over(over: dict[str, list] | None, knob: str, flag: str, seeds: int, label: str):
    """`--over` may not set what another flag sets: one of the two would be silently lost; and
    its values are plain and each given once (`check_over_values`)."""
    check_over_values(over or {}, label)
    if knob == "seed" and seeds > 1:  # each run's own seed would replace the varied one
        raise InputError(
            label,
            f"{flag} seed",
            f"--seeds {seeds} already runs seeds; drop {flag} seed or --seeds",
        )
    for path in over or {}:
        if path == knob:
            raise InputError(label, f"--over {path}", f"{flag} already varies {knob}; drop one")
        if path == "seed" and seeds > 1:
            raise InputError(
                label,
                "--over seed",
                f"--seeds {seeds} already runs seeds; drop --over seed or --seeds",
            )


def check_over_values(over: dict[str, list], label: str) -> None:
    """`--over` takes plain values (numbers, names), each once: a combination is a set of
    (setting, value) pairs the plan compares and names, which a mapping or a list cannot be
    (a sweep's `--grid` takes them); a value given twice would be a tie with itself."""
    for path, values in over.items():
        if not isinstance(values, list | tuple):
            raise InputError(
                label, f"--over {path}", f"takes a list of values, not the {type(values).__name__}"
            )
        for value in values:
            if isinstance(value, dict | list):
                raise InputError(
                    label,
                    f"--over {path}",
                    f"takes plain values (numbers, names), not the {type(value).__name__} "
                    f"{value!r}: put it in a variant and plan it with --variant, or sweep it "
                    "with --grid",
                )
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        if repeated:
            raise InputError(label, f"--over {path}", f"{repeated[0]} is given twice")


def refuse_values_invalid_everywhere(
    over: dict[str, list] | None, rejected: dict[Combo, InputError], label: str
) -> None:
    """An `--over` value the scenario rejects in every combination is a typo, not an answer:
    exit 2 naming it. A value rejected in some combinations only (tp=8 on one GPU) is a row, and
    so is a model whose context the workload overruns (a ContextError): that is an answer."""
    for path, values in (over or {}).items():
        for value in values:
            mine = [c for c in combinations(over) if (path, value) in c]
            answered = all(isinstance(rejected.get(c), ContextError) for c in mine)
            if all(c in rejected for c in mine) and not answered:
                exc = rejected[mine[0]]
                raise InputError(label, exc.where or f"--over {path}={value}", exc.message)
    if over and len(rejected) == len(combinations(over)):  # every combination, for mixed reasons
        exc = next(iter(rejected.values()))
        raise InputError(label, exc.where, exc.message)


def carried_price(base: Scenario, over: dict[str, list] | None) -> list[str]:
    """`--over cluster.gpu=NAME` replaces the whole gpu mapping, its `price_per_gpu_hour` too:
    that price moves into `cluster.gpu_prices` under the GPU's name, so it still prices that GPU
    (and only that one) instead of the list price."""
    cluster = base.cluster
    own = getattr(getattr(cluster, "gpu", None), "price_per_gpu_hour", None)
    if not over or "cluster.gpu" not in over or own is None:
        return []
    table = dict(cluster.gpu_prices)
    table.setdefault(cluster.gpu.name, own)
    return [format_assignment("cluster.gpu_prices", table)]
