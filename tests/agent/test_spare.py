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
            {"FLEXJOB_MASTER_TOKEN_FILE": str(job / "master.token")},  # the run's token (0600)
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


SLEEPER = "import sys, time\nprint('started', flush=True)\ntime.sleep(float(sys.argv[1]))\n"


def test_a_spare_declines_another_worker_count_and_dies_with_the_caller_it_took(
    tmp_path: Path,
) -> None:
    """A node with another --nproc-per-node runs cold beside the spare; the next node it can
    take is its own, and killing that node's command (SIGKILL) ends the spare and its
    workers too."""
    from flexjob.master.main import MasterHandle, start_master
    from tests.support.masters import master_config

    spares = tmp_path / "spares"
    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLEXJOB_")}
    env["PYTHONPATH"] = str(Path(__file__).parents[2])
    masters: list[MasterHandle] = []
    procs: list[subprocess.Popen[str]] = []

    def agent(nproc: int, seconds: str, log: str) -> subprocess.Popen[str]:
        """A node of a job of its own (one master at a time in this process)."""
        for m in masters:
            m.stop()
        job = log.removesuffix(".log")
        masters[:] = [start_master(master_config(job, tmp_path / job), token="")]
        cmd = _flexjob(
            "agent", "--master", masters[0].address, "--nproc-per-node", str(nproc),
            "--spare-dir", str(spares), "--run-dir", str(tmp_path / "run"), str(script), seconds,
        )  # fmt: skip
        with (tmp_path / log).open("w") as f:
            procs.append(subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT))
        return procs[-1]

    try:
        spare = subprocess.Popen(
            _flexjob("agent", "--spare", "--nproc-per-node", "2", "--spare-dir", str(spares)),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        procs.append(spare)  # type: ignore[arg-type]
        sock = wait_until(lambda: next(spares.glob("spare-*.sock"), None), 120, 0.1, "warm")
        warm = psutil.Process(spare.pid).children()
        assert agent(1, "0", "cold.log").wait(120) == 0
        assert "/rank0]: started" in (tmp_path / "cold.log").read_text()  # it ran its node
        assert sock.exists() and spare.poll() is None  # the spare still waits
        caller = agent(2, "600", "taken.log")
        wait_until(
            lambda: (tmp_path / "taken.log").read_text().count("started") == 2, 120, 0.1, "run"
        )
        caller.kill()
        assert spare.wait(30) == -9  # the node is gone, so is its stand-in's spare
        wait_until(lambda: not any(p.is_running() for p in warm), 30, 0.1, "workers gone")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for m in masters:
            m.stop()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--master", "127.0.0.1:1"], "SCRIPT is required (unless --spare)"),
        (["x.py"], "--master (or $FLEXJOB_MASTER) is required (unless --spare)"),
        (["--spare", "x.py"], "--spare takes no SCRIPT"),
    ],
)
def test_agent_without_a_script_or_master_or_a_spare_with_a_script_is_refused(
    args: list[str], named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from flexjob.cli.main import app

    monkeypatch.delenv("FLEXJOB_MASTER", raising=False)
    got = CliRunner().invoke(app, ["agent", *args])
    assert got.exit_code == 2
    assert f"error: {named}" in got.output
