"""Fixed-global-batch fidelity runs of the digits example: one at a fixed world size, one that
loses a worker and gains a node mid-way, both against a master whose job has ``spec.batch``.

For ``tests/e2e/test_batch_fidelity.py`` (bounded) and ``benchmarks/batch_fidelity.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from flexjob.api import names
from flexjob.core.training.batch import BatchPlan
from flexjob.core.training.master_config import MasterConfig, NodeHealthConfig
from flexjob.core.training.rendezvous import RendezvousConfig
from tests.e2e.jobs import Job, poll, start_agent, start_run

#: Seconds a run may take to reach a point in its progress (torch imports on a loaded machine).
STARTUP_TIMEOUT = 150.0
GLOBAL_BATCH = 240
MICRO_BATCH = 16
#: Plain SGD at a modest rate: the final loss then depends on the global batch, not on noise.
SCRIPT_ARGS = ("--epochs", "6", "--batch-size", str(MICRO_BATCH), "--momentum", "0", "--lr", "0.5")


@dataclass(frozen=True, slots=True)
class RunResult:
    loss: float
    output: str


def start_master(
    tmp: Path, max_nodes: int, batch: BatchPlan | None = None
) -> subprocess.Popen[bytes]:
    """A ``flexjob master`` for a job whose ``spec.batch`` is ``batch`` (default: this
    module's fixed global batch); its output goes to ``tmp/master.out``."""
    config = MasterConfig(
        job_name="fidelity",
        batch=batch or BatchPlan.for_global_batch(GLOBAL_BATCH, MICRO_BATCH),
        rendezvous=RendezvousConfig(min_nodes=1, max_nodes=max_nodes),
        node_health=NodeHealthConfig(heartbeat_timeout=5.0),
    )
    job_dir = tmp / "job"
    job_dir.mkdir(parents=True)
    env = {**os.environ, names.ENV_MASTER_CONFIG: config.to_json()}
    cmd = [sys.executable, "-m", "flexjob", "master", "--port", "0", "--job-dir", str(job_dir)]
    with (tmp / "master.out").open("wb") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)


def stop_all(job: Job | None, master: subprocess.Popen[bytes]) -> None:
    """Stop the run (when it started) and its master (SIGTERM, SIGKILL after 15 s)."""
    if job is not None:
        job.stop()
    master.terminate()
    try:
        master.wait(15)
    except subprocess.TimeoutExpired:
        master.kill()
        master.wait()


def _final_loss(*texts: str) -> float:
    found = re.findall(r"loss=([0-9.]+)", "".join(texts))
    assert found, "no loss line in the output:\n" + "".join(texts)
    return float(found[-1])


def _run(tmp: Path, *, elastic: bool, timeout: float) -> RunResult:
    master = start_master(tmp, max_nodes=3 if elastic else 2)
    job: Job | None = None
    try:
        probe = Job(master, tmp / "job", tmp / "master.out", [])
        address = probe.master_address()
        nnodes = "1:3" if elastic else "2"
        args = (*SCRIPT_ARGS, "--step-delay", "0.25" if elastic else "0")
        flags = ("--master", address, "--nnodes", nnodes, "--start-nodes", "2")
        job = start_run(tmp, *flags, script_args=args)
        extra = []
        if elastic:
            # Generous bounds: on a loaded machine the first world takes a while to import torch.
            probe.wait_progress(0.25, world_size=2, timeout=STARTUP_TIMEOUT)
            victim = poll("a worker process", lambda: job.workers()[:1] if job else None, 30)[0]
            victim.kill()
            probe.wait_progress(0.45, timeout=STARTUP_TIMEOUT)
            extra.append(start_agent(job, tmp, "late-1", args))
            probe.wait_progress(0.0, world_size=3, timeout=STARTUP_TIMEOUT)
        assert job.wait(timeout) == 0, job.output()
        if extra:
            poll(
                "late agent to exit",
                lambda: job is not None and job.extra[0].poll() is not None,
                30,
            )
        texts = [job.output(), *(p.read_text(errors="replace") for p in extra)]
        return RunResult(_final_loss(*texts), "".join(texts))
    finally:
        stop_all(job, master)


def fixed_world_run(tmp: Path, timeout: float = 240.0) -> RunResult:
    """Two nodes from start to end."""
    return _run(tmp, elastic=False, timeout=timeout)


def elastic_run(tmp: Path, timeout: float = 240.0) -> RunResult:
    """Two nodes; one worker killed at 25% (its agent restarts it), a third node joins at 45%."""
    return _run(tmp, elastic=True, timeout=timeout)
