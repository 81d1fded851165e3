"""Local replicas: run in flexjob's own interpreter, failures read from the log's tail, and
stop signals turned into a clean stop."""

import os
import signal
import sys
from pathlib import Path

import pytest

from flexjob.platform.local.interpreter import own_interpreter
from flexjob.platform.local.log_tail import log_tail
from flexjob.platform.stop_signals import StopRequested, raise_on_stop_signals


@pytest.mark.parametrize("python", ["python", "python3", "python3.11"])
def test_a_bare_python_is_flexjobs_own_interpreter(python: str) -> None:
    assert own_interpreter([python, "-m", "flexjob", "agent"]) == [
        sys.executable, "-m", "flexjob", "agent",
    ]  # fmt: skip


def test_a_bare_flexjob_runs_in_flexjobs_interpreter() -> None:
    assert own_interpreter(["flexjob", "agent", "x.py"]) == [
        sys.executable, "-m", "flexjob", "agent", "x.py",
    ]  # fmt: skip


@pytest.mark.parametrize("argv", [["/usr/bin/python3", "x.py"], ["./python", "x"], ["bash"]])
def test_a_path_or_another_program_is_kept(argv: list[str]) -> None:
    assert own_interpreter(argv) == argv


def test_log_tail_keeps_the_last_non_empty_lines(tmp_path: Path) -> None:
    log = tmp_path / "w.log"
    log.write_text("".join(f"line {i}\n" for i in range(2000)) + "\n\nRuntimeError: boom\n")
    assert log_tail(log, lines=2) == "line 1999\nRuntimeError: boom"
    assert log_tail(tmp_path / "missing.log") == ""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_signal_raises_once_with_the_shell_exit_code(sig: signal.Signals) -> None:
    before = signal.getsignal(sig)
    with pytest.raises(StopRequested) as stopped, raise_on_stop_signals():
        try:
            os.kill(os.getpid(), sig)
            signal.sigtimedwait([], 0)  # let the handler run
        finally:
            os.kill(os.getpid(), sig)  # a second one while stopping is ignored
    assert stopped.value.exit_code == 128 + sig
    assert signal.getsignal(sig) == before
