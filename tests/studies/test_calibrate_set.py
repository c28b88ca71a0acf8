"""`simsched calibrate --set PATH=VALUE`, through the real entry point: every case gets the flag
after its own `set`, a flag on a fitted path is that setting's start, and bad flags exit 2.

The cases run the token server on one lone request, whose first token comes
max(min_prefill_ms, prefill / prefill_tokens_per_ms) after it arrives (sim/cluster/token_server.py)
with nothing queued ahead: each figure below is that formula, worked by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simsched.cli.calibrate import _unreached
from simsched.studies.calibration.spec import load_calibration

LONE = """name: lone
seed: 1
tenants:
  - id: t
    arrivals: {kind: periodic, interval_ms: 1, count: 1}
    prefill_tokens: 480
    decode_tokens: 10
cluster:
  service_model: token_server
  prefill_tokens_per_ms: 48
  min_prefill_ms: 0
admission: {enabled: false}
"""
# the same, with a variant that sets the prefill rate itself
WITH_VARIANT = LONE + "variants:\n  - {name: slow, set: {cluster.prefill_tokens_per_ms: 24}}\n"
POOLED = """name: pooled
seed: 1
tenants:
  - {id: t, arrivals: {kind: periodic, interval_ms: 1.0, count: 2}, prefill_tokens: 64,
     decode_tokens: 16}
cluster:
  pools:
    - {name: p, role: prefill, replicas: 1, gpu: h100-80gb, model: llama-3-8b}
    - {name: d, role: decode, replicas: 1, gpu: h100-80gb, model: llama-3-8b}
  kv_transfer: roce_400g
admission: {enabled: false}
"""
MIN = "cluster.min_prefill_ms"
RATE = "cluster.prefill_tokens_per_ms"
HOLD = "cluster.kv_hold_factor=5"


def write_files(folder: Path, scenario_b: str = "lone.yaml") -> Path:
    """cal.yaml: case `a` fits `min_prefill_ms` (start 1, bounds [0, 30]); case `b` is not fitted
    and, on the lone request, sets its own prefill rate to 96 tokens/ms."""
    for name, text in (
        ("lone.yaml", LONE),
        ("variant.yaml", WITH_VARIANT),
        ("pooled.yaml", POOLED),
    ):
        (folder / name).write_text(text, encoding="utf-8")
    case = {"metric": "mean_ttft_ms", "measured": 12.0}
    own = [f"{RATE}=96"] if scenario_b == "lone.yaml" else []
    spec = {
        "settings": [{"path": MIN, "low": 0.0, "high": 30.0, "start": 1.0, "cases": ["a"]}],
        "cases": [
            {"name": "a", "scenario": "lone.yaml", **case},
            {"name": "b", "scenario": scenario_b, "set": own, **case},
        ],
    }
    path = folder / "cal.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def rows(out: str) -> dict[str, tuple[float, float]]:
    """Each case's (as written, start or fitted) figures from the printed table."""
    found = {}
    for line in out.splitlines()[1:]:
        if not line.strip():
            break
        name, _, _, written, after, _ = line.split()
        found[name] = (float(written), float(after))
    return found


def test_no_fit_runs_every_case_at_the_flags_value(tmp_path: Path, simsched_cli) -> None:
    code, out, _ = simsched_cli(
        "calibrate", write_files(tmp_path), "--no-fit", "--set", f"{RATE}=32"
    )
    assert code in (0, None)
    # 480 tokens at 32 tokens/ms: 15 ms, in both columns (the flag is part of the scenario); case
    # b's own 96 tokens/ms (5 ms) gives way to the command line
    assert rows(out) == {"a": (15.0, 15.0), "b": (15.0, 15.0)}
    assert f"every case, after its own set (--set):\n  {RATE}=32\n" in out


def test_without_flags_a_cases_own_set_holds(tmp_path: Path, simsched_cli) -> None:
    code, out, _ = simsched_cli("calibrate", write_files(tmp_path), "--no-fit")
    assert code in (0, None)
    assert rows(out) == {"a": (10.0, 10.0), "b": (5.0, 5.0)}  # 480/48 and 480/96
    assert "(--set):\n  cluster.min_prefill_ms=1   # only a\nas written" in out


def test_a_flag_on_a_fitted_path_is_its_start(tmp_path: Path, simsched_cli) -> None:
    code, out, _ = simsched_cli(
        "calibrate", write_files(tmp_path), "--no-fit", "--set", f"{MIN}=20"
    )
    assert code in (0, None)
    # a: as written 480/48 = 10 (no setting applied), at the start max(20, 10) = 20; b, which the
    # setting does not reach, gets the value as an override: max(20, 480/96) = 20 in both columns
    assert rows(out) == {"a": (10.0, 20.0), "b": (20.0, 20.0)}
    # and the label says so: b gets the flag, not the setting
    assert f"  {MIN}=20   # only a; from --set; 1 case gets the --set as a plain flag\n" in out


def test_the_fit_starts_at_the_flag(tmp_path: Path, simsched_cli) -> None:
    # min_prefill_ms below a's 10 ms of prefill does not move its figure: the fit has no slope
    # to follow and stays where the flag started it (the file's own start is 1)
    path = write_files(tmp_path)
    code, out, err = simsched_cli("calibrate", path, "--set", f"{MIN}=4", "--set", f"{RATE}=48")
    assert code in (0, None)
    assert f"  {MIN}=4   # only a; start 4 from --set; 1 case gets the --set as a plain" in out
    assert err.startswith("evaluation 1: the file's own settings and --set\nevaluation 2: 4\n")


def test_the_same_output_with_one_or_two_jobs(tmp_path: Path, simsched_cli) -> None:
    args = ("calibrate", write_files(tmp_path), "--set", f"{MIN}=4", "--set", f"{RATE}=32")
    serial, parallel = simsched_cli(*args, "--jobs", "1"), simsched_cli(*args, "--jobs", "2")
    assert serial.code in (0, None) and parallel.code in (0, None)
    assert serial.out == parallel.out


def test_the_fragment_says_the_flags(tmp_path: Path, simsched_cli) -> None:
    out = tmp_path / "fit.yaml"
    flag = f"{RATE}=32"
    code, _, _ = simsched_cli(
        "calibrate", write_files(tmp_path), "--no-fit", "--set", flag, "--out", out
    )
    assert code in (0, None)
    text = out.read_text(encoding="utf-8")
    assert text.startswith(f"# simsched calibrate cal.yaml --set {flag}: median absolute error")
    assert yaml.safe_load(text) == {"per_case_settings": [{"name": "", "path": MIN, "value": 1.0}]}


def test_a_fitted_paths_flag_is_an_override_where_no_setting_reaches(tmp_path: Path) -> None:
    # the fitted case gets it as the setting's start, the other after its own set
    spec, _, _ = load_calibration(write_files(tmp_path), [f"{MIN}=3"])
    assert spec.settings[0].start == 3.0
    assert spec.command_line.case_sets("a") == ()
    assert spec.command_line.case_sets("b") == (f"{MIN}=3",)


@pytest.mark.parametrize(
    ("flag", "scenario_b", "starts"),
    [
        (MIN, "lone.yaml", f"cal.yaml: --set {MIN}: expected PATH=VALUE, got '{MIN}'"),
        ("cluster..tp=1", "lone.yaml", "cal.yaml: --set cluster..tp=1: malformed path"),
        ("cluster.nosuch=1", "lone.yaml",
         "cal.yaml: --set cluster.nosuch=1: case 'a': lone.yaml: cluster.nosuch: unknown key"),
        (f"{RATE}=-1", "lone.yaml", f"cal.yaml: --set {RATE}=-1: case 'a': lone.yaml: {RATE}: "),
        (f"{MIN}=31", "lone.yaml",
         f"cal.yaml: --set {MIN}=31: settings[0] fits {MIN} within [0, 30]: a start of 31 is "
         "outside"),
        (f"{MIN}=soon", "lone.yaml",
         f"cal.yaml: --set {MIN}=soon: settings[0] fits {MIN}: its start must be a number"),
        ("cluster={service_model: token_server}", "lone.yaml",
         "cal.yaml: --set cluster={service_model: token_server}: case 'a': it would overwrite "
         f"settings[0], which fits {MIN} there"),
        (HOLD, "pooled.yaml",
         f"cal.yaml: --set {HOLD}: case 'b': pooled.yaml: cluster.kv_hold_factor: unknown key"),
        (f"{RATE}=32", "variant.yaml",
         f"cal.yaml: --set {RATE}=32: case 'b': variant.yaml: variant 'slow' sets {RATE} itself"),
        (f"variants=[{{name: x, set: {{{MIN}: 25}}}}]", "lone.yaml",
         f"cal.yaml: --set variants=[{{name: x, set: {{{MIN}: 25}}}}]: a case's variants are "
         "not set from the command line"),
    ],
)  # fmt: skip
def test_bad_flags_exit_2_with_one_line_before_any_run(
    flag: str,
    scenario_b: str,
    starts: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    simsched_cli,
) -> None:
    write_files(tmp_path, scenario_b)
    monkeypatch.chdir(tmp_path)
    code, out, err = simsched_cli("calibrate", "cal.yaml", "--set", flag, "--out", "fit.yaml")
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(starts), err
    assert "evaluation" not in err and not out  # nothing simulated, nothing printed
    assert not (tmp_path / "fit.yaml").exists()


def test_a_pooled_cases_message_says_where_the_setting_lives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simsched_cli
) -> None:
    write_files(tmp_path, "pooled.yaml")
    monkeypatch.chdir(tmp_path)
    # a token-server setting, which the lone request (case a) takes and a pool does not
    _, _, err = simsched_cli("calibrate", "cal.yaml", "--set", HOLD)
    assert err.rstrip().endswith("set a pool's own, as --set cluster.pools[0].kv_hold_factor)")


def test_a_fitted_cluster_paths_flag_reaches_every_pool(tmp_path: Path) -> None:
    # as the setting's `cluster.X` does: case a gets it as the setting's start (on each pool),
    # case b, which the setting leaves out, as each pool's override
    (tmp_path / "pooled.yaml").write_text(POOLED, encoding="utf-8")
    path = "cluster.latency_model.overhead_ms"
    spec = {
        "settings": [{"path": path, "low": 0.0, "high": 5.0, "cases": ["a"]}],
        "cases": [
            {"name": n, "scenario": "pooled.yaml", "metric": "mean_e2e_ms", "measured": 9.0}
            for n in ("a", "b")
        ],
    }
    (tmp_path / "cal.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    loaded, _, _ = load_calibration(tmp_path / "cal.yaml", [f"{path}=2"])
    assert loaded.settings[0].start == 2.0
    assert loaded.command_line.case_sets("a") == ()
    assert loaded.command_line.case_sets("b") == (
        "cluster.pools[0].latency_model.overhead_ms=2",
        "cluster.pools[1].latency_model.overhead_ms=2",
    )
    # and the output's label counts b, by its pools' copies, as one case with a plain flag
    assert _unreached(loaded, path) == 1
