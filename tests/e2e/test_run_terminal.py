"""``flexjob run`` on a terminal (issue 37, items 3-5): the ranks' output is on lines of its
own, never glued onto the live progress line, and the summary line is the last thing shown
(the live line is gone by then). Run under a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
SCRIPTS = Path(__file__).parent / "scripts"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_on_a_terminal(args: list[str], timeout: float) -> tuple[int, str]:
    """Run ``flexjob ARGS`` with stdout and stderr on a pty; its exit code and what a
    terminal would show (escape codes dropped, each carriage return starting over its line)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "flexjob", *args], stdout=follower, stderr=follower, env=env
    )
    os.close(follower)
    raw = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: every process of the run is gone
                break
            if not chunk:
                break
            raw += chunk
        elif proc.poll() is not None:
            break
    os.close(leader)
    code = proc.wait(30)
    lines = []
    for line in ANSI.sub("", raw.decode(errors="replace")).split("\n"):
        lines.append(line.rstrip("\r").split("\r")[-1])
    return code, "\n".join(line for line in lines if line.strip())


def test_rank_output_has_lines_of_its_own_and_the_summary_is_last(tmp_path: Path) -> None:
    script = str(SCRIPTS / "prints_lines.py")
    code, shown = run_on_a_terminal(["run", "--nnodes", "1", script], 150)
    lines = shown.splitlines()
    assert code == 0, shown
    ranked = [line for line in lines if "line " in line and "of the trainer" in line]
    assert len(ranked) == 40, shown
    assert all(line.startswith("[worker-0/rank0]: line ") for line in ranked), shown
    assert not any("samples/s" in line and "[worker-" in line for line in lines), shown
    assert lines[-1].startswith("flexjob: job dir "), shown
    assert not any("samples/s" in line for line in lines[lines.index(ranked[-1]) + 1 :]), shown
