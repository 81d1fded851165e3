"""The installed ``flexjob`` console script (the venv's ``bin/flexjob``) ends a finished
command as ``python -m flexjob`` does, without the interpreter's teardown
(``platform.fast_exit``), and a user sees the same exit status and output.

The teardown is seen through a ``sitecustomize`` on ``PYTHONPATH`` holding an object whose
``__del__`` writes a line to stderr: only the interpreter's teardown (freeing the modules)
deletes it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flexjob import __version__

SCRIPT = Path(sys.executable).parent / "flexjob"
TEARDOWN = "probe: the interpreter tore itself down"
PROBE = (
    "import os\n"
    "class _Probe:\n"
    "    def __del__(self):\n"
    f"        os.write(2, b'{TEARDOWN}\\n')\n"
    "_probe = _Probe()\n"
)
pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason=f"no console script at {SCRIPT}")


def probed(tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """``command`` run with the teardown probe installed."""
    (tmp_path / "sitecustomize.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


def test_the_probe_sees_the_teardown_of_a_normal_exit(tmp_path: Path) -> None:
    done = probed(tmp_path, sys.executable, "-c", "print('hi')")
    assert (done.returncode, done.stdout, done.stderr) == (0, "hi\n", f"{TEARDOWN}\n")


def test_the_console_script_ends_a_finished_command_without_the_teardown(
    tmp_path: Path,
) -> None:
    done = probed(tmp_path, str(SCRIPT), "--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"flexjob {__version__}\n", "")


def test_the_console_script_keeps_a_usage_errors_status_and_message(tmp_path: Path) -> None:
    done = probed(tmp_path, str(SCRIPT), "no-such-command")
    assert done.returncode == 2
    assert "no-such-command" in done.stderr and TEARDOWN not in done.stderr
