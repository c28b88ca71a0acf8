"""Capacity planning: the smallest capacity (or the largest load) that meets every SLO.

The knob takes the values LO, LO+S, ..., HI (HI is always a candidate, even off the step), and
the search bisects them, assuming that meeting the SLOs is monotone in the knob: once a capacity
knob (`cluster.total_kv_blocks`, `cluster.service_tokens_per_ms`) is large enough, larger values
are too. `maximize` looks for the largest value that still meets them, for a load knob whose
larger values mean more load; which direction a knob goes is the user's call (a larger
`arrivals.interval_ms` is *less* load, so one maximizes a rate, not an interval). After the
search every probe is checked for that monotonicity, and the result says plainly when it fails.

An SLO reads `TARGET.METRIC OP LIMIT`: TARGET is a tenant id or `all`, METRIC a column of the
metrics row (`simsched.results.tenants`), OP one of <=, <, >=, >.

Shedding is never hidden: unless an SLO already judges shedding (`shed`, `shed_rate` or a shed
reason), the plan adds `all.shed_rate<=0.001` and says so in its notes; when shed SLOs judge some
tenants or classes only, it adds `TENANT.shed_rate<=0.001` for each tenant they leave uncovered
(an SLO on `all` shedding replaces every guard). With `seeds > 1` each
probe runs every seed and a decision rule judges the runs (`simsched.studies.probing`). With
`over`, one search runs per combination of the categorical values, and `minimize` picks among
their answers (`simsched.studies.fleet`). Probes of a round (several combinations, several
points of an interval, every seed) run at once on the sweep's runners.

The parts live beside it: `slo` (the expressions), `knob` (the candidates), `bisection` (the
search), `probing` (running and judging probes), `fleet` (combinations, cost, the choice),
`plan_inputs` (the SLOs, shed guards and flags checked before any probe), `plan_notes`.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from simsched.config.load_scale import burst_only, unscalable_tenant
from simsched.config.loading import (
    load_scenario,
    resolve_variants,
    scenario_from_mapping,
    select_variants,
    settings_of,
)
from simsched.config.overrides import format_assignment
from simsched.config.prices import fleet_cost, gpu_price
from simsched.config.router import router_warning
from simsched.config.scenario import Scenario
from simsched.config.shadowing import refuse_shadowed, refuse_shadowed_overrides
from simsched.errors import InputError
from simsched.outputs.engine_notes import engine_notes, engine_of
from simsched.outputs.moe_notes import moe_notes
from simsched.results.simulate import variant_workload
from simsched.studies.bisection import Bisection, PlanResult, Probe, monotonicity_warnings
from simsched.studies.fleet import Combo, FleetPlan, combinations, shown
from simsched.studies.grid import relabel
from simsched.studies.headroom import KNOB as HEADROOM_KNOB
from simsched.studies.headroom import Headroom, headroom_of, headroom_search
from simsched.studies.knob import Number, knob_values
from simsched.studies.limits import check_combinations, check_plan_runs, check_seeds
from simsched.studies.plan_inputs import (
    carried_price,
    check_choices,
    check_over,
    plan_slos,
    refuse_values_invalid_everywhere,
)
from simsched.studies.plan_notes import fleet_notes, rule_notes
from simsched.studies.plan_usage import answer_utilisation
from simsched.studies.probing import ProbeSpec, run_probes
from simsched.studies.provisioned_cost import autoscaled, provisioned_cost_per_hour
from simsched.studies.quota_sizing import quota_tenant
from simsched.studies.runners import LocalPool, connect_dask, run_on_client
from simsched.studies.seed_fragility import one_seed_note, thin_answer_note
from simsched.studies.uncertainty import (
    check_uncertainty,
    default_tie_margin,
    model_error_note,
    moved_efficiency,
    runner_up_document,
    runner_up_notes,
    shifted,
)
from simsched.workload.context_limits import ContextError

DASK_CONNECT_TIMEOUT_S = 5


def plan(
    scenario: str | Path | Scenario,
    knob: str,
    range_: str | tuple[Number, Number],
    slos: list[str],
    *,
    step: Number | None = None,
    maximize: bool = False,
    variant: str | None = None,
    overrides: list[str] | None = None,
    over: dict[str, list] | None = None,
    minimize: str = "value",
    seeds: int = 1,
    rule: str = "interval",
    jobs: int = 1,
    dask_address: str | None = None,
    on_probe: Callable[[Probe], None] | None = None,
    headroom: bool = True,
    tie_margin: float | None = None,
    model_error: float | None = None,
) -> FleetPlan:
    """Search `knob` over the range for the boundary of the SLOs, judged on `variant`, within
    each combination of the `over` values; the best combination by `minimize`.

    Then, by default, the answer's headroom (`headroom.py`: the largest load_scale it absorbs),
    the runner-up and near-ties within `tie_margin` (`uncertainty.py`), its utilisation at the
    scenario's seed, and with `model_error` the whole plan again with the latency model's
    efficiencies moved by -model_error and +model_error, to say whether the answer survives."""
    source = _Source(scenario, list(overrides or []), variant)
    base = source.load([])
    label = source.label
    combos = math.prod(len(values) for values in (over or {}).values())
    check_seeds(seeds, base.limits, label)  # the study's size, before any list is built
    check_combinations(combos, base.limits, label)
    source.overrides += carried_price(base, over)
    chosen, resolved = _variant(base, variant, label)
    flag = "--maximize" if maximize else "--vary"
    refuse_shadowed_overrides(base, overrides, [chosen], label)
    for path, what in [(knob, flag), *((p, "--over") for p in over or {})]:
        refuse_shadowed(  # the variant's own value would win at every probe
            base,
            path,
            f"{what} {path}",
            [chosen],
            label,
            "judge another variant (--variant) or take the setting out of this one",
        )
    parsed, notes = plan_slos(slos, resolved, label, quota_tenant(knob, resolved))
    check_choices(minimize, rule, seeds, jobs, label)
    measured = tie_margin is None  # the note says whose margin it is
    if tie_margin is None:  # the judged model's own calibration area
        tie_margin = default_tie_margin(resolved)
    check_uncertainty(tie_margin, model_error, resolved, label)
    notes += [note for note in [router_warning(resolved.cluster)] if note]
    check_over(over, knob, flag, seeds, label)
    values = knob_values(base, knob, range_, step, label, flag)
    check_plan_runs(combos, len(values), seeds, base.limits, label)
    plans = [
        PlanResult(knob, chosen, maximize, values, parsed, combo=c) for c in combinations(over)
    ]
    seed_list = tuple(range(base.seed, base.seed + seeds)) if seeds > 1 else (None,)
    rejected = {}
    workloads: dict = {}  # the ends' workloads, for their context check: one per distinct workload
    for result in plans:
        judged = (chosen, workloads, seed_list)
        exc = _check_ends(source, result, flag, len(plans) > 1, minimize, judged)
        if exc is not None:
            rejected[result.combo] = exc
    workloads.clear()  # checked: the probes build their own, and these could be large
    refuse_values_invalid_everywhere(over, rejected, label)
    # each valid combination's own variant, once: the engine and MoE notes read them
    combined = _combinations_resolved(source, plans, chosen, flag, label)
    notes += _engine_notes(combined)  # engines set side by side
    notes += _moe_notes(combined, chosen, resolved)  # an MoE or speculative model's error
    spec = ProbeSpec(source.path, label, source.raw, tuple(source.overrides), knob, chosen,
                     tuple(parsed), tuple(resolved.tenant_ids()), seed_list, rule,
                     uuid.uuid4().hex)  # fmt: skip
    fleet = FleetPlan(knob, chosen, maximize, parsed, rule, seeds, minimize, plans, notes=notes,
                      scenario=base.name)  # fmt: skip
    check = lambda combo, value: source.load_at(combo, knob, value, flag)  # noqa: E731
    no_headroom = ""  # why a plan that would report headroom cannot
    with _runner(jobs, dask_address) as (runner, slots):
        searches = [Bisection(result) for result in fleet.plans if result.error is None]
        _search(searches, spec, runner, slots, fleet.probes, on_probe, check)
        _finish(searches, len(spec.seeds))
        prices: dict[str, str] = {}
        provisioned: list[str] = []  # the answers priced by what they provisioned
        for result in plans:
            if result.answer is not None:
                result.gpus, result.cost_per_hour = _cost(
                    source, result, result.answer, prices, provisioned
                )
        fleet.choose()
        if headroom and fleet.best is not None and not maximize and knob != HEADROOM_KNOB:
            # closed-loop clients set their own pace: no load_scale applies, so say so instead
            answer = source.load_at(fleet.best.combo, knob, fleet.best.answer, flag)
            fixed = unscalable_tenant(answer) or burst_only(answer)
            if fixed is None:
                try:
                    fleet.headroom = _headroom(fleet, spec, source, runner, slots)
                except ContextError as exc:  # more load, and a request the model refuses
                    where = exc.where.replace("the probe at --vary ", "at ")  # not the user's
                    no_headroom = f"headroom not computed: {where}: {exc.message}"
            else:
                notes.append(f"headroom not computed: {fixed}")
    fleet.notes += rule_notes(fleet) + fleet_notes(fleet)
    if prices:
        fleet.notes.append(f"prices per GPU-hour: {', '.join(prices.values())}")
    if provisioned:
        fleet.notes.append(
            "autoscaled (cluster.autoscale, or a pool's autoscale): $/hour is the GPU-hours "
            "provisioned in one run at the answer (the scenario's seed) over the run's hours, "
            "times the price (on cluster.pools, each pool's at its own price); GPUs is the count "
            "it starts with"
        )
    fleet.notes += runner_up_notes(fleet, tie_margin)
    fleet.choice = runner_up_document(fleet, tie_margin)
    if fleet.headroom is not None:
        fleet.notes.append(fleet.headroom.text)
    elif no_headroom:
        fleet.notes.append(no_headroom)
    thin = one_seed_note(fleet, tie_margin)
    if thin is None and not model_error:  # --model-error says where the answer goes itself
        latency = getattr(resolved.cluster, "latency_model", None)
        movable = getattr(latency, "kind", resolved.cluster.service_model) == "roofline"
        thin = thin_answer_note(fleet, tie_margin, measured=measured, rerun=movable)
    fleet.notes += [thin] if thin else []
    if fleet.best is not None:
        fleet.utilisation, usage_notes = answer_utilisation(fleet, source.load_at, flag)
        fleet.notes += usage_notes
    if model_error:
        again = dict(scenario=scenario, knob=knob, range_=range_, slos=slos, step=step,
                     maximize=maximize, variant=variant, over=over, minimize=minimize,
                     seeds=seeds, rule=rule, jobs=jobs, dask_address=dask_address,
                     headroom=False)  # fmt: skip
        fleet.model_error = [
            shifted(plan(**again, overrides=[*(overrides or []), moved_efficiency(s)]), s)
            for s in (-model_error, model_error)
        ]
        fleet.notes.append(model_error_note(fleet, model_error, fleet.model_error))
    return fleet


def _headroom(fleet: FleetPlan, spec: ProbeSpec, source: _Source, runner, slots) -> Headroom:
    """One bisection of load_scale at the answer, on the plan's runner."""
    best = fleet.best
    base = float(source.load_at(best.combo, fleet.knob, best.answer, "--vary").load_scale)
    combo = (*best.combo, (fleet.knob, best.answer))
    search = headroom_search(base, combo, fleet.variant, fleet.slos)
    at_scale = replace(spec, knob=HEADROOM_KNOB)
    check = lambda combo, value: source.load_at(combo, HEADROOM_KNOB, value, "headroom")  # noqa: E731
    _search([search], at_scale, runner, slots, [], None, check)
    return headroom_of(search, base)


class _Source:
    """The scenario a plan loads at every probe: a file, or an object's settings as JSON."""

    def __init__(
        self, scenario: str | Path | Scenario, overrides: list[str], variant: str | None = None
    ) -> None:
        self.overrides = overrides
        # the variant judged, when named: the others are left out before validation, as
        # `scenario --variant` leaves them out (a --set they cannot take does not refuse it)
        self.variants = [variant] if variant else None
        if isinstance(scenario, Scenario):
            self.raw: str | None = json.dumps(settings_of(scenario))
            self.label = self.path = scenario.name
        else:
            self.raw = None
            self.label = str(scenario)
            self.path = str(Path(scenario).resolve())  # workers may run in another folder

    def load(self, texts: list[str]) -> Scenario:
        if self.raw is None:
            try:
                return load_scenario(self.path, [*self.overrides, *texts], self.variants)
            except InputError as exc:
                source = self.label if exc.source == self.path else exc.source
                raise InputError(source, exc.where, exc.message) from None
        texts = [*self.overrides, *texts]  # an object's variants are left out as a file's are
        return scenario_from_mapping(json.loads(self.raw), texts, self.label, None, self.variants)

    def load_at(self, combo: Combo, knob: str, value: Number, flag: str) -> Scenario:
        texts = [format_assignment(p, v) for p, v in combo] + [format_assignment(knob, value)]
        labels = {t: f"--over {p}={v}" for t, (p, v) in zip(texts, combo, strict=False)}
        labels[texts[-1]] = f"{flag} {knob}={value}"
        try:
            return self.load(texts)
        except InputError as exc:  # a value the scenario rejects
            raise relabel(exc, labels) from None


def _variant(scenario: Scenario, name: str | None, label: str) -> tuple[str, Scenario]:
    variants = resolve_variants(scenario, label)
    return select_variants(variants, [name], label)[0] if name else variants[-1]


def _combinations_resolved(
    source: _Source, plans: list[PlanResult], chosen: str, flag: str, label: str
) -> dict[str, Scenario]:
    """The judged variant of each combination of `--over` the scenario accepts, by its label;
    empty for a plan without `--over` (one combination: the scenario itself)."""
    if len(plans) < 2:
        return {}
    combined = {}
    for result in plans:
        if result.error is None:
            loaded = source.load_at(result.combo, result.knob, result.values[0], flag)
            combined[shown(result.combo)] = _variant(loaded, chosen, label)[1]
    return combined


def _engine_notes(combined: dict[str, Scenario]) -> list[str]:
    """The engine note a `simsched scenario` table gives variants on different engines, for the
    combinations of `--over` (say `--over cluster.engine=vllm,sglang`) when they differ so."""
    resolved: dict[str, Scenario] = {}  # one per engine: an `--over cluster.gpu=...` beside it
    for loaded in combined.values():  # repeats each engine
        resolved.setdefault(engine_of(loaded.cluster), loaded)
    return engine_notes(resolved, list(resolved))


def _moe_notes(combined: dict[str, Scenario], chosen: str, resolved: Scenario) -> list[str]:
    """The MoE and speculative notes a `simsched scenario` table gives, for the scenario or, with
    `--over`, for each combination (an engine or GPU it sets changes what the notes say)."""
    if not combined:
        return moe_notes({chosen: resolved}, [chosen])
    return moe_notes(combined, list(combined), prefix="")


def _check_ends(
    source: _Source,
    result: PlanResult,
    flag: str,
    several: bool,
    minimize: str,
    judged: tuple[str, dict, tuple],
) -> InputError | None:
    """Both ends load (a range the scenario rejects fails now), their workloads fit the model's
    context (the ends: the most load and the longest lengths a knob gives), and cost has a
    price; with several combinations, a combination the scenario rejects is marked and its
    error returned."""
    chosen, workloads, seeds = judged  # the judged variant, the workloads built, the seeds
    try:
        for value in (result.values[0], result.values[-1]):
            source.load_at(result.combo, result.knob, value, flag)
            for seed in seeds:  # every seed's workload is a run of the probe
                _check_context_at(source, result, value, flag, chosen, workloads, seed)
    except InputError as exc:
        if not several:
            raise
        result.error = f"{exc.where}: {exc.message}" if exc.where else exc.message
        result.message = f"{shown(result.combo)}: not a valid combination ({result.error})"
        return exc
    if minimize in ("cost", "gpus"):
        gpus, cost = _cost(source, result, result.values[-1])
        if gpus is None or (minimize == "cost" and cost is None):
            why = "the token server has no GPUs" if gpus is None else "its GPU has no price"
            raise InputError(
                source.label,
                f"--minimize {minimize}",
                f"{why} ({shown(result.combo) or 'the scenario'}); cost needs the "
                "continuous_batching model and a price: cluster.gpu_prices (e.g. --set "
                "'cluster.gpu_prices={b200: 9.0}') or price_per_gpu_hour in the gpu mapping",
            )
    return None


def _check_context_at(
    source: _Source,
    result: PlanResult,
    value: Number,
    flag: str,
    chosen: str,
    workloads: dict,
    seed: int | None,
) -> None:
    """The workload at one end and seed fits the model's context, or a ContextError naming the
    combination, the value and the seed (where the scenario's own seed is not the one)."""
    texts = [format_assignment(p, v) for p, v in result.combo]
    texts.append(format_assignment(result.knob, value))
    loaded = source.load(texts + ([f"seed={seed}"] if seed is not None else []))
    variant = _variant(loaded, chosen, source.label)[1]
    try:
        variant_workload(chosen, variant, workloads, variant)
    except ContextError as exc:  # named by the combination, value and seed that draw it
        at = [f"--over {path}={v}" for path, v in result.combo]
        at.append(f"{flag} {result.knob}={value}")
        at += [f"seed {seed}"] if seed is not None else []
        where = f"{', '.join(at)}: {exc.where}"
        raise ContextError(source.label, where, exc.message) from None
    except InputError:  # another problem of that workload: its probe names it, as before
        pass


def _cost(
    source: _Source,
    result: PlanResult,
    value: Number,
    prices: dict[str, str] | None = None,
    provisioned: list[str] | None = None,
) -> tuple[int | None, float | None]:
    """(GPUs, $/hour) at `value`; `prices` collects each GPU's price and where it came from,
    `provisioned` the combinations priced by what an autoscaler provisioned."""
    scenario = source.load_at(result.combo, result.knob, value, "--vary")
    resolved = dict(resolve_variants(scenario, source.label))[result.variant]
    cluster = resolved.cluster
    gpus, cost = fleet_cost(cluster)
    if autoscaled(resolved) and prices is not None:  # what it provisioned, from a run
        cost = provisioned_cost_per_hour(scenario, result.variant, resolved)
        if provisioned is not None:
            provisioned.append(shown(result.combo) or result.variant)
    if gpus is not None and prices is not None:
        for priced in getattr(cluster, "pools", [cluster]):  # cluster.pools: each pool's GPU
            price, origin = gpu_price(priced)
            listed = f"${price:g} ({origin})" if price is not None else "no price"
            prices[priced.gpu.name] = f"{priced.gpu.name} {listed}"
    return gpus, cost


def _search(searches: list[Bisection], spec: ProbeSpec, runner, slots: int, probes: list,
            on_probe, check) -> None:  # fmt: skip
    """Rounds: every unfinished search names its next probes, and they run together. Each value
    is loaded here first (`check`), so a value the scenario rejects is an input error naming the
    flag, as it is at the range's ends, not a failure inside a worker."""
    while active := [s for s in searches if not s.done]:
        width = max(1, slots // (len(spec.seeds) * len(active)))
        wanted = [(search, index) for search in active for index in search.wanted(width)]
        batch = [(search.result.combo, search.order[index]) for search, index in wanted]
        for combo, value in batch:
            check(combo, value)
        for (search, index), probe in zip(wanted, run_probes(spec, batch, runner), strict=True):
            search.record(index, probe)
            probes.append(probe)
            if on_probe:
                on_probe(probe)


def _finish(searches: list[Bisection], seeds: int) -> None:
    for search in searches:
        search.finish()
        search.result.warnings = monotonicity_warnings(search.result)
        if search.result.warnings and seeds == 1:  # say why it may happen
            search.result.warnings.append(
                "with one seed, run-to-run noise can move a metric across its target near the "
                "boundary; --seeds N judges each probe on N runs (the mean and its interval)"
            )


@contextmanager
def _runner(jobs: int, dask: str | None):
    """(run a batch of tasks, how many run at once): local processes kept for the whole plan,
    this process alone (one job), or a Dask cluster."""
    quiet = lambda done, total: None  # noqa: E731 - the plan reports probes, not tasks
    if dask:
        client = connect_dask(dask, DASK_CONNECT_TIMEOUT_S)
        try:
            slots = max(1, sum(client.nthreads().values()))
            yield (lambda tasks: run_on_client(client, tasks, quiet)), slots
        finally:
            client.close()
        return
    with LocalPool(jobs) as pool:
        yield (lambda tasks: pool.run(tasks, quiet)), jobs
