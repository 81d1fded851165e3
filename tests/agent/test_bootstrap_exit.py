"""A training process whose script finished ends at once, as a ``multiprocessing`` child does
(issue 37, item 5: a torch process's interpreter teardown took seconds to minutes on a loaded
machine), with what a normal exit keeps: its status, its ``atexit`` handlers, its flushed
output and its non-daemon threads' work."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flexjob.agent.bootstrap import NO_TORCH

pytestmark = pytest.mark.timeout(120)

SCRIPT = """
import atexit, pathlib, sys, threading, time
out = pathlib.Path(sys.argv[1])
atexit.register(lambda: (out / "atexit").write_text("ran"))
def late():
    time.sleep(0.3)
    (out / "thread").write_text("done")
threading.Thread(target=late).start()
print("last line", end="")  # no newline: flushed at exit
if sys.argv[2] != "return":
    sys.exit(int(sys.argv[2]) if sys.argv[2].isdigit() else sys.argv[2])
"""


def run(tmp_path: Path, how: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    start = {"env": {}, "target": str(script), "args": [str(tmp_path), how], "module": False}
    cmd = [sys.executable, "-m", "flexjob.agent.bootstrap", NO_TORCH]
    return subprocess.run(
        cmd, input=json.dumps(start) + "\n", capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(("how", "status"), [("return", 0), ("0", 0), ("3", 3), ("bye", 1)])
def test_a_finished_script_keeps_its_status_atexit_output_and_threads(
    tmp_path: Path, how: str, status: int
) -> None:
    done = run(tmp_path, how)
    assert done.returncode == status, done.stderr
    assert done.stdout == "last line"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "thread").read_text() == "done"
    assert ("bye" in done.stderr) is (how == "bye")
