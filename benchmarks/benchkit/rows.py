"""Every row `make bench` measures, in order. A row is data: add one here in a few lines.

Ratio goals compare whole processes run in turns in the same bench run (best of --repeat each),
so a loaded machine slows both sides alike; see docs/benchmarks.md for what each row means.
"""

from __future__ import annotations

from .context import Context, data_file, reference_loop
from .kinds import Comparison, Phases, PlanThroughput, SpeedBudgets, reference_command
from .verdicts import Goal

AZURE = "azure_llm_2023_conv.csv"
MOONCAKE = "mooncake_fast25_conversation.jsonl"
COLOCATED_4 = "cluster.pools=[{name: colocated, role: mixed, replicas: 4, gpu: h100-80gb}]"


def token_server_500k(ctx: Context) -> list[str]:
    """`simsched scenario --out` on a 500k-request trace: token server, DRR with admission."""
    trace = ctx.trace(500_000)
    scenario = [ctx.simsched, "scenario", ctx.benchmark("bench.yaml")]
    return [*scenario, f"--set=trace.path={trace}", f"--out={ctx.out / 'token_server_500k'}"]


def reference_on(requests: int):
    def command(ctx: Context) -> list[str]:
        trace = ctx.trace(requests)
        return reference_command(ctx, trace, f"reference_{requests}.csv")

    return command


def scenario(file: str, out: str, *settings: str):
    def command(ctx: Context) -> list[str]:
        sets = [f"--set={s}" for s in settings]
        return [ctx.simsched, "scenario", ctx.benchmark(file), *sets, f"--out={ctx.out / out}"]

    return command


ROWS = (
    Comparison(
        name="token_server_500k",
        title="simsched scenario --out on a 500k-request trace (token server, DRR with "
        "admission) vs the reference loop on the same trace",
        subject=token_server_500k,
        yardstick=reference_on(500_000),
        goals=(Goal("wall", 0.5),),
        needs=(reference_loop,),
    ),
    Comparison(
        name="batching_100k",
        title="100k Azure-like requests on 4 H100 replicas (continuous batching, roofline; "
        "benchmarks/batching_100k.yaml) vs the reference loop on 200k requests",
        subject=scenario("batching_100k.yaml", "batching_100k"),
        yardstick=reference_on(200_000),
        goals=(Goal("wall", 0.5),),
        needs=(reference_loop, data_file(AZURE)),
    ),
    Comparison(
        name="prefix_cache_cost",
        title="the Mooncake conversation trace on 8 H100 replicas, round robin "
        "(benchmarks/prefix_mooncake.yaml): prefix caching on vs off",
        subject=scenario("prefix_mooncake.yaml", "prefix_on"),
        yardstick=scenario("prefix_mooncake.yaml", "prefix_off", "cluster.prefix_caching=false"),
        goals=(Goal("cpu", 1.3), Goal("rss", 1.3)),
        labels=("caching on", "caching off"),
        needs=(data_file(MOONCAKE),),
    ),
    Comparison(
        name="pd_vs_colocated",
        title="12k requests on 4 H100s (benchmarks/pd_bench.yaml): 2 prefill + 2 decode "
        "replicas vs the same requests on 4 co-located ones",
        subject=scenario("pd_bench.yaml", "pd"),
        yardstick=scenario("pd_bench.yaml", "colocated", COLOCATED_4),
        goals=(Goal("wall", 1.5),),
        labels=("P/D", "co-located"),
    ),
    PlanThroughput(
        name="plan_throughput",
        title="configurations per hour of a seeded fleet plan (benchmarks/plan_bench.py), "
        "serial and --jobs 2; floor: the reference loop's pace on the same requests",
    ),
    Phases(
        name="phases_1m",
        title="information: a 1M-request Poisson scenario's generate, simulate and results times",
        scenario="poisson_1m.yaml",
    ),
    SpeedBudgets(
        name="budget",
        title="speed budgets: the wall-clock checks kept out of the test suite, each on the "
        "tests that hold its cases",
    ),
)
