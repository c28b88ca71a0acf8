"""`make bench`'s machinery (benchmarks/benchkit): verdicts, the table, measurement and skips.

Nothing here times anything against a limit: the measured numbers come from fakes or from
quantities fixed by construction (bytes allocated), so these tests cannot flake on a busy machine.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import bench  # noqa: E402
from benchkit import budgets, kinds, measure  # noqa: E402
from benchkit.context import Context, data_file, first_missing, reference_loop  # noqa: E402
from benchkit.rows import ROWS  # noqa: E402
from benchkit.verdicts import (  # noqa: E402
    FAIL,
    INFO,
    PASS,
    SKIP,
    Goal,
    Outcome,
    exit_status,
    judged,
    progress_line,
    table,
)


def context(tmp_path: Path, repeat: int = 1) -> Context:
    return Context(repo=tmp_path, out=tmp_path, reference=tmp_path / "ref", repeat=repeat)


# --- goals and verdicts ----------------------------------------------------------------------


def test_a_cost_goal_passes_up_to_its_limit_and_a_floor_from_it() -> None:
    assert Goal("wall", 0.5).met(0.5) and not Goal("wall", 0.5).met(0.5001)
    assert Goal("wall", 2.0, floor=True).met(2.0) and not Goal("wall", 2.0, floor=True).met(1.99)
    assert judged("r", Goal("cpu", 1.3), 1.31, "").status == FAIL
    assert judged("r", Goal("cpu", 1.3), 1.29, "").value == "1.29x"


def test_only_a_missed_goal_fails_the_run() -> None:
    calm = [Outcome("a", "x", "1", "-", s) for s in (PASS, INFO, SKIP)]
    assert exit_status(calm) == 0
    assert exit_status([*calm, Outcome("b", "x", "1", "-", FAIL)]) == 1


def test_the_table_says_why_a_row_was_skipped() -> None:
    skip = Outcome("rowname", "skipped", "-", "-", SKIP, "no trace here")
    text = table([Outcome("other", "wall time ratio", "0.40x", "<= 0.50x", PASS, "ok"), skip])
    header, rule, passed, skipped = text.splitlines()
    assert header.split() == ["row", "measured", "value", "goal", "verdict", "note"]
    assert set(rule.replace(" ", "")) == {"-"}
    assert passed.split()[-1] == PASS  # a measured row's detail is not a note
    assert skipped.endswith("skipped: no trace here")
    assert progress_line(skip) == "SKIP: no trace here"


# --- measurement -------------------------------------------------------------------------------


def test_runs_alternate_and_the_best_is_least_time_and_most_memory() -> None:
    calls = []
    results = iter([(3, 5, 100), (9, 9, 50), (2, 6, 90), (8, 7, 60)])

    def fake(command: list[str]) -> measure.Run:
        calls.append(command[0])
        wall, cpu, rss = next(results)
        return measure.Run(wall, cpu, rss)

    best = measure.alternate({"ours": ["a"], "theirs": ["b"]}, repeat=2, run=fake)
    assert calls == ["a", "b", "a", "b"]
    assert best["ours"] == measure.Run(2, 5, 100)
    assert best["theirs"] == measure.Run(8, 7, 60)


def test_a_process_peak_memory_is_measured() -> None:
    # 100 MiB, one byte written in every page: resident, so the peak is at least that
    grow = "x = bytearray(100 * 2**20); x[::4096] = b'1' * len(x[::4096]); print('done')"
    run = measure.measure([sys.executable, "-c", grow])
    assert run.peak_rss_mib >= 100
    assert run.stdout == "done\n"
    assert run.cpu_s > 0


def test_a_failing_command_says_so_with_its_error() -> None:
    with pytest.raises(measure.CommandFailed, match="exited 3: boom"):
        measure.measure([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"])


# --- rows --------------------------------------------------------------------------------------


def test_a_comparison_divides_the_subject_by_the_yardstick(monkeypatch) -> None:
    measured = {"simsched": measure.Run(2.0, 3.0, 260.0), "reference": measure.Run(5.0, 4.0, 200.0)}
    monkeypatch.setattr(kinds, "alternate", lambda commands, repeat: measured)
    goals = (Goal("wall", 0.5), Goal("cpu", 0.5), Goal("rss", 1.3))
    row = kinds.Comparison("r", "t", lambda c: ["a"], lambda c: ["b"], goals=goals)
    wall, cpu, rss = row.run(context(Path(".")))
    assert (wall.value, wall.status) == ("0.40x", PASS)  # 2 / 5
    assert (cpu.value, cpu.status) == ("0.75x", FAIL)  # 3 / 4
    assert (rss.value, rss.status) == ("1.30x", PASS)  # 260 / 200, at the limit


PLAN = kinds.PlanThroughput("plan", "t")
SHAPE = {"requests": 29_000, "seeds": 2}  # what `plan_bench.py --count` reports


def test_plan_throughput_floor_is_the_reference_pace() -> None:
    run = measure.Run(36.0, 35.0, 300.0, stdout='{"configurations": 12}')
    # 12 configurations in 36 s: 1,200 an hour; the reference takes 4 s for the same requests,
    # so the floor is 3600 / 4 = 900 an hour
    met = PLAN.verdict("serial", run, SHAPE, measure.Run(4.0, 3.9, 100.0))
    assert (met.value, met.goal, met.status) == ("1,200", ">= 900", PASS)
    assert "35.0 s CPU" in met.detail
    assert PLAN.verdict("serial", run, SHAPE, measure.Run(36 / 13, 2.7, 100.0)).status == FAIL
    assert PLAN.verdict("serial", run, SHAPE, None).status == INFO


def test_a_busy_machine_judges_the_serial_plan_on_cpu_time() -> None:
    # the plan waited for a core: 60 s wall for 30 s of CPU (2x, over the 1.5 of a busy machine)
    run = measure.Run(60.0, 30.0, 300.0, stdout='{"configurations": 12}')
    judged = PLAN.verdict("serial", run, SHAPE, measure.Run(4.0, 3.0, 100.0))
    # on CPU: 12 x 3600 / 30 = 1,440 an hour against 3600 / 3 = 1,200 (on wall it would be
    # 720 against 900: a FAIL that measures the load)
    assert (judged.value, judged.goal, judged.status) == ("1,440", ">= 1,200", PASS)
    assert judged.what == "configurations/CPU-hour, serial" and "busy machine" in judged.detail


def test_a_plan_with_workers_is_judged_on_wall_time_without_a_cpu_figure() -> None:
    # the measured process's CPU leaves out its pool workers': 1 s of CPU for 20 s of wall
    run = measure.Run(20.0, 1.0, 300.0, stdout='{"configurations": 12}')
    quiet = PLAN.verdict("--jobs 2", run, SHAPE, measure.Run(4.0, 3.9, 100.0))
    assert (quiet.value, quiet.goal, quiet.status) == ("2,160", ">= 900", PASS)  # 12 x 3600 / 20
    assert "CPU" not in quiet.detail
    busy = PLAN.verdict("--jobs 2", run, SHAPE, measure.Run(8.0, 4.0, 100.0))
    assert (busy.goal, busy.status) == (">= 450", PASS) and "rerun on a quieter" in busy.detail


def test_a_missing_input_skips_a_row_and_a_failing_command_fails_it(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    assert "seed_scheduler.py" in reference_loop(ctx)
    assert "make traces" in data_file("t.csv")(ctx)
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "seed_scheduler.py").write_text("")
    assert first_missing((reference_loop,), ctx) is None
    assert first_missing((reference_loop, data_file("t.csv")), ctx).startswith("no scenarios/data")

    class Broken:
        name, needs = "broken", ()

        def run(self, ctx: Context) -> list[Outcome]:
            raise measure.CommandFailed("simsched scenario ... exited 1: bad")

    skip_row = kinds.Phases("p", "t", "x.yaml", needs=(data_file("t.csv"),))
    assert bench.run_row(skip_row, ctx)[0].status == SKIP
    assert bench.run_row(Broken(), ctx)[0].status == FAIL


def test_bench_exits_one_on_a_missed_goal_and_two_on_a_bad_option(monkeypatch, capsys) -> None:
    class Fixed:
        needs = ()

        def __init__(self, name: str, status: str) -> None:
            self.name, self.title, self.status = name, name, status

        def run(self, ctx: Context) -> list[Outcome]:
            return [Outcome(self.name, "x", "1", "-", self.status)]

    monkeypatch.setattr(bench, "ROWS", (Fixed("good", PASS), Fixed("bad", FAIL)))
    assert bench.main(["--only", "good"]) == 0
    assert bench.main([]) == 1
    with pytest.raises(SystemExit) as info:
        bench.main(["--repeat", "0"])
    assert info.value.code == 2
    assert "bad" in capsys.readouterr().out


def test_rows_have_distinct_names_and_a_title() -> None:
    names = [row.name for row in ROWS]
    assert len(set(names)) == len(names)
    assert all(row.title for row in ROWS)


# --- speed budgets -----------------------------------------------------------------------------

REPORT = """<testsuites><testsuite>
<testcase classname="tests.x.test_a" name="test_fast[1]" time="0.20"/>
<testcase classname="tests.x.test_a" name="test_fast[2]" time="0.70"/>
<testcase classname="tests.x.test_a" name="test_other" time="9.00"/>
<testcase classname="tests.x.test_a" name="test_broken" time="0.10">
  <failure message="assert 1 == 2&#10;more">trace</failure></testcase>
<testcase classname="tests.x.test_a" name="test_absent" time="0.00">
  <skipped message="trace.csv not present"/></testcase>
</testsuite></testsuites>"""


def test_a_budget_judges_the_slowest_of_its_own_cases(tmp_path: Path) -> None:
    (tmp_path / "r.xml").write_text(REPORT)
    cases = budgets.read_report(tmp_path / "r.xml")

    def judge(tests: tuple[str, ...], seconds: float) -> Outcome:
        return budgets.judge(budgets.Budget("b", "tests/x/test_a.py", tests, seconds), cases)

    assert (judge(("test_fast",), 0.7).value, judge(("test_fast",), 0.7).status) == ("0.70 s", PASS)
    assert judge(("test_fast",), 0.69).status == FAIL
    assert judge(("test_fast", "test_broken"), 5).detail == "test failed: assert 1 == 2"
    assert (judge(("test_absent",), 1).status, judge(("test_absent",), 1).detail) == (
        SKIP,
        "trace.csv not present",
    )
    assert judge(("test_renamed",), 1).status == FAIL  # a budget whose tests vanished


def test_every_budget_names_tests_that_exist() -> None:
    for budget in budgets.BUDGETS:
        tree = ast.parse((REPO / budget.path).read_text(encoding="utf-8"))
        defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert set(budget.tests) <= defined, budget.name


def test_budget_runs_keep_each_case_best_time_and_any_failure() -> None:
    def case(name: str, seconds: float, status: str = "passed") -> budgets.Case:
        return budgets.Case("tests.x.test_a", name, seconds, status)

    first = [case("test_a[1]", 0.5), case("test_a[2]", 0.1), case("test_b", 0.1)]
    second = [case("test_a[1]", 0.2), case("test_a[2]", 0.3), case("test_b", 0.3, "failed")]
    best = {c.name: (c.seconds, c.status) for c in budgets.best_cases([first, second])}
    assert best == {
        "test_a[1]": (0.2, "passed"),
        "test_a[2]": (0.1, "passed"),
        "test_b": (0.3, "failed"),
    }


def test_a_busy_machine_is_named_with_the_cpu_ratio_beside_the_wall_one() -> None:
    idle = measure.Run(2.0, 1.9, 100.0), measure.Run(4.0, 3.9, 100.0)
    assert kinds.load_note(*idle) == ""
    busy = measure.Run(80.0, 8.0, 100.0), measure.Run(190.0, 13.0, 100.0)
    # wall / CPU: 10.0 and 14.6; ratios: wall 80 / 190 = 0.42, CPU 8 / 13 = 0.62
    assert kinds.load_note(*busy) == (
        "; busy machine (wall up to 14.6x CPU time), so wall-time goals are judged on CPU time: "
        "wall ratio 0.42x, CPU ratio 0.62x"
    )


def test_on_a_busy_machine_a_wall_goal_is_judged_on_cpu_time(monkeypatch) -> None:
    busy = {"simsched": measure.Run(80.0, 8.0, 100.0), "reference": measure.Run(190.0, 13.0, 90)}
    monkeypatch.setattr(kinds, "alternate", lambda commands, repeat: busy)
    goals = (Goal("wall", 0.5), Goal("rss", 1.3))
    wall, rss = kinds.Comparison("r", "t", lambda c: [], lambda c: [], goals=goals).run(
        context(Path("."))
    )
    # wall 80 / 190 = 0.42 would pass; CPU 8 / 13 = 0.62 misses
    assert (wall.what, wall.value, wall.status) == ("CPU time ratio", "0.62x", FAIL)
    assert (rss.what, rss.value, rss.status) == ("peak memory ratio", "1.11x", PASS)


def test_the_machine_line_says_when_there_are_more_runnable_processes_than_cores() -> None:
    from benchkit.verdicts import machine_line

    assert machine_line(2, 1.5) == "machine: 2 cores, load average 1.5 over the last minute"
    assert machine_line(2, 12.3).endswith("busy: more runnable processes than cores, so "
                                          "absolute times are inflated")  # fmt: skip


def test_plan_configs_digest_names_the_outcomes_of_a_configuration() -> None:
    import plan_configs

    first, other = plan_configs.run(["h100-80gb:1", "h100-80gb:2"], duration_s=5)
    again = plan_configs.run(["h100-80gb:1"], duration_s=5)[0]
    assert first["requests"] > 100
    assert first["digest"] == again["digest"]  # the same simulation, the same digest
    assert first["digest"] != other["digest"]  # another fleet, other outcomes
