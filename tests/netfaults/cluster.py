"""A job across test hosts, the way users run one on several machines: ``flexjob run
--address A`` on the first host (its master listens on and advertises A, it starts one node
there) and ``flexjob agent --master A:PORT --address B`` on each other host, all with the
same ``FLEXJOB_MASTER_TOKEN``; the chaos script logs every sample for the exactly-once check.

Shared by ``tests/netfaults`` and ``benchmarks/network_faults.py``. ``HostJob`` knows where
each process runs and reads the job's progress from the sample logs (the test process is
outside the hosts' net: everything it learns comes through files).
"""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.chaos.harness import LOG_ENV, ROOT, SCRIPT, TRAIN_SIZE, _env, check_samples, read_samples
from tests.support.hosts import Host, HostNet
from tests.support.polling import job_ended, wait_until

MASTER_LINE = re.compile(r"flexjob: master (\S+) \(job")


@dataclass
class HostJob:
    net: HostNet
    workdir: Path
    epochs: int
    env: dict[str, str]
    run: subprocess.Popen[bytes] | None = None
    master: str = ""
    agents: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    script: str = str(SCRIPT)  # what every node trains (the chaos script logs each sample)

    @property
    def log_dir(self) -> Path:
        return Path(self.env[LOG_ENV])

    @property
    def expected(self) -> int:
        return self.epochs * TRAIN_SIZE

    def out(self, name: str) -> Path:
        return self.workdir / f"{name}.out"

    def output(self) -> str:
        return "".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.workdir.glob("*.out"))
        )

    def trained(self) -> int:
        return sum(read_samples(self.log_dir).values())

    def start_run(
        self,
        host: Host,
        nodes: int,
        script_args: list[str],
        extra: list[str] = (),  # type: ignore[assignment]
    ) -> None:
        cmd = [
            sys.executable, "-m", "flexjob", "run", "--address", host.address,
            "--job-dir", str(self.workdir / "job"), "--no-progress",
            "--nnodes", f"1:{nodes}", "--start-nodes", "1", *extra, self.script, *script_args,
        ]  # fmt: skip
        with self.out("run").open("wb") as f:
            self.run = host.popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=self.env, cwd=ROOT)
        found = wait_until(
            lambda: MASTER_LINE.search(self.out("run").read_text(errors="replace")),
            60, 0.1, "the master's address line",
        )  # fmt: skip
        self.master = found.group(1)

    def start_agent(
        self,
        host: Host,
        node_id: str,
        script_args: list[str],
        extra: list[str] = (),  # type: ignore[assignment]
    ) -> subprocess.Popen[bytes]:
        cmd = [
            sys.executable, "-m", "flexjob", "agent", "--master", self.master,
            "--address", host.address, "--node-id", node_id, *extra, self.script, *script_args,
        ]  # fmt: skip
        with self.out(node_id).open("ab") as f:
            proc = host.popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=self.env, cwd=ROOT)
        self.agents[node_id] = proc
        return proc

    def wait(self, timeout: float) -> int:
        assert self.run is not None
        return job_ended(self.run, timeout, self.output)

    def accuracy(self) -> float | None:
        found = re.findall(r"accuracy=([0-9.]+)", self.output())
        return float(found[-1]) if found else None

    def check(self):  # type: ignore[no-untyped-def]
        return check_samples(self.log_dir, self.epochs)


def start_job(
    net: HostNet,
    workdir: Path,
    *,
    epochs: int = 1,
    step_delay: float = 0.02,
    heartbeat_timeout: float = 5.0,
    hang_timeout: float = 30.0,
    env: dict[str, str] | None = None,
) -> HostJob:
    """``flexjob run`` on host 0 and an agent on every other host; returns once all started."""
    workdir.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(16)
    full = {
        **_env(workdir / "samples", workdir / "home"),
        "FLEXJOB_MASTER_TOKEN": token,
        **(env or {}),
    }
    job = HostJob(net, workdir, epochs, full)
    args = ["--epochs", str(epochs), "--step-delay", str(step_delay)]
    timeouts = ["--hang-timeout", str(hang_timeout)]
    job.start_run(
        net[0], len(net.hosts), args,
        ["--heartbeat-timeout", str(heartbeat_timeout), "--max-restarts", "3", *timeouts],
    )  # fmt: skip
    for i, host in enumerate(net.hosts[1:], start=1):
        job.start_agent(host, f"node-{i}", args, timeouts)
    return job
