"""Speed budgets: the wall-clock checks that used to sit in the test suite, kept here.

Each budget names tests (the same cases, so the same hostile inputs) and the most a test case
may take in the call phase, as the test once asserted. Bench runs these tests --repeat times,
serially, in one pytest process each, reads each case's call time from pytest's JUnit XML
report, keeps each case's best time (as every row does: load only adds time), and judges the
slowest case of each budget. The tests themselves still check what is refused and how; only
the "how fast" lives here, where a loaded machine makes a slow run visible instead of flaky.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from .verdicts import FAIL, PASS, SKIP, Outcome


@dataclass(frozen=True)
class Budget:
    """At most `seconds` for each case of `tests` (function names) in the test file `path`."""

    name: str
    path: str
    tests: tuple[str, ...]
    seconds: float


BUDGETS = (
    Budget("hostile YAML refused", "tests/config/test_hostile_files.py",
           ("test_deep_nesting_is_refused", "test_an_alias_bomb_is_refused_fast",
            "test_a_self_referencing_alias_is_refused",
            "test_an_alias_chain_is_refused_by_its_expanded_depth"), 2.0),
    Budget("2 GiB scenario refused unread", "tests/config/test_hostile_files.py",
           ("test_a_huge_sparse_file_is_refused_before_reading",), 1.0),
    Budget("clock overflow refused", "tests/sim/test_huge_times.py",
           ("test_a_clock_beyond_any_resolution_is_refused",), 5.0),
    Budget("one very long request", "tests/sim/test_long_requests.py",
           ("test_a_long_request_keeps_the_timeline_small",), 10.0),
    Budget("not-Dask server fails", "tests/studies/test_dask_impostors.py",
           ("test_a_server_that_is_not_dask_fails_in_time",), 15.0),
    Budget("hostile traces refused", "tests/workload/test_hostile_traces.py",
           ("test_bad_csv_rows_are_refused", "test_an_unreadable_csv_record_names_its_line",
            "test_an_azure_time_outside_the_nanosecond_clock_is_refused",
            "test_deeply_nested_mooncake_json_is_refused",
            "test_mooncake_keys_given_twice_and_negative_times_are_refused",
            "test_a_huge_mooncake_integer_is_refused_by_line"), 2.0),
    Budget("real trace read", "tests/workload/test_trace_formats.py", ("test_real_trace",), 1.0),
    Budget("resource bombs refused", "tests/workload/test_resource_limits.py",
           ("test_too_many_requests_are_refused_before_generating",
            "test_vanishing_sojourns_are_refused_not_looped_on",
            "test_too_many_replicas_are_refused", "test_a_timeline_too_fine_is_refused",
            "test_arrivals_beyond_any_clock_are_refused", "test_a_vanishing_cv_is_refused",
            "test_a_rate_curve_beyond_any_clock_is_refused",
            "test_sessions_with_huge_turn_counts_are_refused",
            "test_an_explicit_interval_too_fine_for_the_replicas_is_refused"), 3.0),
)  # fmt: skip


@dataclass(frozen=True)
class Case:
    """One test case from the JUnit report: its call time and how it ended."""

    module: str  # dotted, as pytest's classname: tests.config.test_hostile_files
    name: str  # the case: function[parameters]
    seconds: float
    status: str  # "passed", "failed" or "skipped"
    message: str = ""

    @property
    def function(self) -> str:
        return self.name.split("[")[0]


def best_cases(runs: list[list[Case]]) -> list[Case]:
    """Each case's least time over several runs; a case that failed in any run stays failed."""
    merged: dict[tuple[str, str], Case] = {}
    for case in (c for run in runs for c in run):
        key = (case.module, case.name)
        seen = merged.get(key)
        if (
            seen is None
            or seen.status == "passed"
            and (case.status != "passed" or case.seconds < seen.seconds)
        ):
            merged[key] = case
    return list(merged.values())


def read_report(path: Path) -> list[Case]:
    cases = []
    for node in ElementTree.parse(path).iter("testcase"):
        status, message = "passed", ""
        for child in node:
            if child.tag in ("failure", "error", "skipped"):
                status = "skipped" if child.tag == "skipped" else "failed"
                message = first_line(child.get("message") or "")
        cases.append(
            Case(
                module=node.get("classname", ""),
                name=node.get("name", ""),
                seconds=float(node.get("time", "0")),
                status=status,
                message=message,
            )
        )
    return cases


def first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def judge(budget: Budget, cases: list[Case]) -> Outcome:
    """The slowest case of a budget against it; a failed test fails the budget, and a budget
    whose cases were all skipped (an absent trace) is a skip, with pytest's reason."""
    module = budget.path.removesuffix(".py").replace("/", ".")
    mine = [c for c in cases if c.module == module and c.function in budget.tests]
    goal = f"<= {budget.seconds:.2f} s"
    ran = [c for c in mine if c.status != "skipped"]
    if not mine:
        return Outcome(budget.name, "slowest case", "-", goal, FAIL, f"no test ran: {budget.path}")
    if not ran:
        return Outcome(budget.name, "skipped", "-", "-", SKIP, mine[0].message)
    slowest = max(ran, key=lambda c: c.seconds)
    failed = [c for c in ran if c.status == "failed"]
    detail = f"{len(ran)} cases; slowest {slowest.function}"
    if failed:
        why = f"test failed: {failed[0].message}"
        return Outcome(budget.name, "slowest case", "-", goal, FAIL, why)
    status = PASS if slowest.seconds <= budget.seconds else FAIL
    return Outcome(budget.name, "slowest case", f"{slowest.seconds:.2f} s", goal, status, detail)


def run_budgets(repo: Path, out: Path, repeat: int) -> list[Outcome]:
    """Run every budget's tests `repeat` times (one serial pytest process each) and judge each
    budget on its cases' best times."""
    runs = []
    for _ in range(repeat):
        cases = run_tests(repo, out / "budgets.xml")
        if isinstance(cases, str):  # pytest could not start: say why on every budget's line
            return [Outcome(b.name, "slowest case", "-", "-", FAIL, cases) for b in BUDGETS]
        runs.append(cases)
    cases = best_cases(runs)
    return [judge(budget, cases) for budget in BUDGETS]


def run_tests(repo: Path, report: Path) -> list[Case] | str:
    """The budgets' test cases from one pytest run, or why pytest wrote no report."""
    files = sorted({b.path for b in BUDGETS})
    command = [sys.executable, "-m", "pytest", *files, "-q", "-p", "no:randomly",
               "-p", "no:cacheprovider", "-o", "addopts=", "-o", "junit_duration_report=call",
               f"--junitxml={report}"]  # fmt: skip
    report.unlink(missing_ok=True)
    run = subprocess.run(command, cwd=repo, capture_output=True, text=True, check=False)
    if not report.exists():
        return f"pytest exited {run.returncode}: {(run.stderr or run.stdout).strip()[-200:]}"
    return read_report(report)
