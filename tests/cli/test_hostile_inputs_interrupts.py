"""Ctrl-C while `simsched` starts: exit 130 without a traceback (found by the fuzzing campaign).

A SIGINT in the first second or two (typer imported, the command built) printed a
KeyboardInterrupt traceback from inside an import or typer's parameter parsing. Now the CLI's
imports end the process quietly on SIGINT (simsched/cli/startup.py), and `main` turns a
KeyboardInterrupt outside a command's body into one line and exit status 130.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from simsched.cli import app as cli_app

INTERRUPTED = 128 + signal.SIGINT


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        # a test run in the background inherits SIGINT ignored: the child gets the default back
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_sigint_while_the_command_imports_exits_130_in_silence() -> None:
    # the signal lands after `simsched.cli` but before app.py: as it would midway in typer's import
    code = (
        "import os, signal, time\nimport simsched.cli\n"
        "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(60)\n"
    )
    done = _python(code)
    assert (done.returncode, done.stderr) == (INTERRUPTED, "")


def test_once_the_command_is_built_sigint_raises_again() -> None:
    code = (
        "import signal\nimport simsched.cli.app\n"
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    done = _python(code)
    assert (done.returncode, done.stdout.strip()) == (0, "True")


def test_ctrl_c_outside_a_command_body_is_one_line(monkeypatch, capsys) -> None:
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # as when typer is still reading the command's parameters

    monkeypatch.setattr(cli_app, "app", interrupted)
    with pytest.raises(SystemExit) as info:
        cli_app.main()
    assert info.value.code == INTERRUPTED
    assert capsys.readouterr().err == "simsched: interrupted\n"
