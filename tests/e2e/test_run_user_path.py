"""``flexjob run`` / ``agent`` / ``master`` as a new user meets them (issue 13): torchrun's
flags, the master's address, marked output, fail-fast with a root cause, stop signals."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from flexjob.core.training.master_config import MasterConfig
from flexjob.master.launch import spawn_master
from tests.e2e.jobs import poll
from tests.support.local_jobs import run_flexjob

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
SCRIPTS = Path(__file__).parent / "scripts"


def start(cmd: list[str], env: dict[str, str], out: Path) -> subprocess.Popen[bytes]:
    with out.open("wb") as f:
        return subprocess.Popen(
            [sys.executable, "-m", "flexjob", *cmd], env=env, stdout=f, stderr=subprocess.STDOUT
        )


def family(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    with contextlib.suppress(psutil.Error):
        return [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    return []


def gone(procs: list[psutil.Process]) -> bool:
    alive = []
    for p in procs:
        with contextlib.suppress(psutil.Error):
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
    return not alive


def test_unknown_options_and_missing_scripts_fail_at_once_by_name() -> None:
    env = dict(os.environ)
    missing = run_flexjob(env, "run", "--standalone", "--nproc_per_node=2", "x.py")
    assert missing.returncode == 127
    assert "script not found: x.py" in missing.stderr
    unknown = run_flexjob(env, "run", "--bogus-flag", "2", "x.py")
    assert unknown.returncode == 2 and "no such option: --bogus-flag" in unknown.stderr
    static = run_flexjob(env, "run", "--master_addr=10.0.0.1", "x.py")
    assert static.returncode == 2 and "--master-addr is not supported" in static.stderr
    agent = run_flexjob(env, "agent", "--master", "127.0.0.1:1", "missing.py")
    assert agent.returncode == 127 and "script not found: missing.py" in agent.stderr


def test_torchrun_spelling_runs_with_marked_lines_an_address_and_no_leftovers(
    tmp_path: Path,
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    logs = tmp_path / "logs"
    env = {**os.environ, "TMPDIR": str(tmp)}
    out = run_flexjob(
        env,
        "run", "--nnodes", "1:2", "--nproc_per_node=2", "--rdzv-backend=c10d",
        "--rdzv_id=hello", "--rdzv-conf", "join_timeout=60", "--max_restarts=0",
        "--monitor-interval", "0.2", "--node-rank", "0", "--log-dir", str(logs), "--tee", "1",
        "--run-path", "--no-progress", str(SCRIPTS / "hello_rank.py"),
        timeout=90,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[worker-0/rank0]: hello from rank 0 of 2" in out.stdout
    assert "[worker-0/rank1]: hello from rank 1 of 2" in out.stdout
    address = re.search(r"flexjob: master (127\.0\.0\.1:\d+) \(job hello\)", out.stderr)
    assert address, out.stderr
    assert f"flexjob agent --master {address.group(1)} " in out.stderr
    assert (logs / "worker-0" / "1" / "stdout.log").read_text() == "hello from rank 1 of 2\n"
    # (the TCPStore check's cache, flexjob-store-check-*, is kept on purpose)
    assert not list(tmp.glob("flexjob-hello-*")), "the temporary job dir was left behind"


def test_one_crashing_rank_ends_the_run_within_seconds_with_its_root_cause(
    tmp_path: Path,
) -> None:
    crashes = tmp_path / "crashes"
    env = {**os.environ, "CRASH_FILE": str(crashes)}
    proc = start(
        ["run", "--nnodes", "2", "--no-progress", str(SCRIPTS / "crash_rank1.py")],
        env,
        tmp_path / "run.out",
    )
    try:
        rc = proc.wait(100)
    finally:
        proc.kill()
    ended = time.time()
    output = (tmp_path / "run.out").read_text(errors="replace")
    last_crash = float(crashes.read_text().split()[-1])
    assert rc == 1, output
    assert ended - last_crash < 15, f"{ended - last_crash:.1f}s after the crash:\n{output}"
    summary = output[output.index("flexjob: job failed") :]
    assert "rank 1 (local rank 0): exit code 1" in summary
    # Either give-up rule may fire first: ranks are handed out by join order, so the crashing
    # rank can move between nodes and a node's failures need not repeat back to back.
    assert "the same failure twice in a row" in summary or "restarts used up" in summary
    assert "RuntimeError: boom from rank 1" in summary
    assert "no rendezvous" not in output


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_stops_every_process_after_trainers_checkpoint(
    tmp_path: Path, sig: signal.Signals
) -> None:
    env = {**os.environ, "CKPT_DIR": str(tmp_path)}
    script = str(SCRIPTS / "checkpoint_on_term.py")
    proc = start(["run", "--nnodes", "2", "--no-progress", script], env, tmp_path / "run.out")
    try:
        poll("both trainers running", lambda: len(list(tmp_path.glob("*.ready"))) == 2, 90)
        everyone = family(proc)
        assert len(everyone) >= 6  # run, master, 2 agents, 2 trainers
        proc.send_signal(sig)
        assert proc.wait(30) == 128 + sig
        assert sorted(p.name for p in tmp_path.glob("*.ckpt")) == ["rank0.ckpt", "rank1.ckpt"]
        poll("no process of the job left", lambda: gone(everyone), 15)
    finally:
        for p in family(proc):
            with contextlib.suppress(psutil.Error):
                p.kill()


def test_agent_and_master_stop_on_sighup(tmp_path: Path) -> None:
    master = spawn_master(MasterConfig(job_name="hup", job_dir=str(tmp_path / "job")))
    env = {**os.environ, "CKPT_DIR": str(tmp_path)}
    script = str(SCRIPTS / "checkpoint_on_term.py")
    agent = start(["agent", "--master", master.address, script], env, tmp_path / "agent.out")
    try:
        poll("the trainer running", lambda: list(tmp_path.glob("*.ready")), 90)
        everyone = family(agent)
        agent.send_signal(signal.SIGHUP)
        assert agent.wait(30) == 128 + signal.SIGHUP
        assert [p.name for p in tmp_path.glob("*.ckpt")] == ["rank0.ckpt"]
        poll("the trainer gone", lambda: gone(everyone), 15)
        master.process.send_signal(signal.SIGHUP)
        assert master.process.wait(15) == 0
    finally:
        agent.kill()
        master.kill()
