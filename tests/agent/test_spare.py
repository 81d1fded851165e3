"""Warm spares (``flexjob agent --spare``): a pre-started agent whose workers imported torch
takes the node a later ``flexjob agent`` brings, joins the running job and trains; the caller
gets its output and exit code. Real processes, real master, gloo."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psutil
import pytest

from tests.support.polling import wait_until

pytestmark = pytest.mark.timeout(300)

SCRIPT = str(Path(__file__).with_name("spare_train.py"))


def _flexjob(*args: str) -> list[str]:
    return [sys.executable, "-m", "flexjob", *args]


def _steps(out: Path) -> list[tuple[str, int, list[int]]]:
    rows = []
    for f in out.glob("steps-*.txt"):
        for line in f.read_text().splitlines():
            node, pid, *indices = line.split()
            rows.append((node, int(pid), [int(i) for i in indices]))
    return rows


def test_a_warm_spare_takes_a_joining_node_and_trains_every_sample_once(tmp_path: Path) -> None:
    out, spares, job = tmp_path / "out", tmp_path / "spares", tmp_path / "job"
    out.mkdir()
    (out / "slow").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLEXJOB_")}
    env.update(SPARE_TEST_DIR=str(out), PYTHONPATH=str(Path(__file__).parents[2]))
    procs: list[subprocess.Popen[str]] = []

    def start(cmd: list[str], extra: dict[str, str], log: str) -> subprocess.Popen[str]:
        with (tmp_path / log).open("w") as f:
            procs.append(
                subprocess.Popen(
                    cmd, env={**env, **extra}, stdout=f, stderr=subprocess.STDOUT, text=True
                )
            )
        return procs[-1]

    try:
        spare = start(_flexjob("agent", "--spare", "--spare-dir", str(spares)), {}, "spare.log")
        sock = wait_until(lambda: next(spares.glob("spare-*.sock"), None), 120, 0.1, "warm")
        warm_pids = {c.pid for c in psutil.Process(spare.pid).children()}
        assert len(warm_pids) == 1
        run = start(
            _flexjob("run", "--nnodes", "1:2", "--no-progress", "--job-dir", str(job), SCRIPT),
            {"FLEXJOB_SPARE_DIR": str(tmp_path / "no-spares")},  # its own node runs cold
            "run.log",
        )
        wait_until(lambda: _steps(out), 120, 0.1, "the first node stepping")
        address = (job / "master.addr").read_text().strip()
        joiner = start(
            _flexjob(
                "agent", "--master", address, "--node-id", "worker-warm",
                "--run-dir", str(job), "--spare-dir", str(spares), SCRIPT,
            ),
            {},
            "joiner.log",
        )  # fmt: skip
        wait_until(
            lambda: any(n == "worker-warm" for n, _, _ in _steps(out)), 120, 0.1, "warm steps"
        )
        assert not sock.exists()  # the spare took one node and listens no more
        (out / "slow").unlink()
        assert run.wait(120) == 0
        assert joiner.wait(60) == 0
        assert spare.wait(30) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    steps = _steps(out)
    warm = {pid for node, pid, _ in steps if node == "worker-warm"}
    assert warm and warm <= warm_pids  # the spare's own pre-started worker trained
    seen = Counter(i for _, _, indices in steps for i in indices)
    assert sorted(seen) == list(range(1600))
    assert set(seen.values()) == {1}  # every sample exactly once
    assert "[worker-warm/rank1]: trained on worker-warm" in (tmp_path / "joiner.log").read_text()
