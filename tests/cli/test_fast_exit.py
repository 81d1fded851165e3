"""``python -m flexjob`` ends a finished command without the interpreter's teardown
(``platform.fast_exit``), and what a user sees of it stays the same: its exit status and
every line it wrote, piped (block-buffered) output included."""

import subprocess
import sys

from flexjob import __version__


def flexjob(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "flexjob", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_a_finished_command_keeps_its_piped_output_and_status_zero() -> None:
    done = flexjob("--version")
    assert (done.returncode, done.stdout) == (0, f"flexjob {__version__}\n")


def test_a_usage_error_keeps_its_status_and_message() -> None:
    done = flexjob("no-such-command")
    assert done.returncode == 2
    assert "no-such-command" in done.stderr
