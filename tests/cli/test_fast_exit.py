"""``python -m flexjob`` ends a finished command without the interpreter's teardown
(``platform.fast_exit``), and what a user sees of it stays the same: its exit status and
every line it wrote, piped (block-buffered) output included."""

import subprocess
import sys
from pathlib import Path

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


def test_a_script_left_with_an_idle_thread_pool_still_ends(tmp_path: Path) -> None:
    """An idle ``concurrent.futures`` pool never shut down: its threads end as at a normal
    exit (the threading exit hooks), then the ``atexit`` handlers run."""
    script = tmp_path / "pool.py"
    script.write_text(
        "import atexit, concurrent.futures\n"
        "from flexjob.platform.fast_exit import exit_now\n"
        "pool = concurrent.futures.ThreadPoolExecutor(2)\n"
        "pool.submit(print, 'ran')\n"
        "atexit.register(print, 'atexit')\n"
        "exit_now(3)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout) == (3, "ran\natexit\n")
