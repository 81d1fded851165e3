"""Helpers for whole-job tests: start ``flexjob run`` / ``flexjob agent`` as real processes,
watch the master, find and kill workers and agents, clean everything up."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import psutil

from flexjob.api.names import ENV_MASTER_TOKEN_FILE
from flexjob.core.operator.job_master import TOKEN_FILE
from flexjob.rpc.auth import master_token
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import Progress
from tests.support.polling import job_ended, wait_until

ROOT = Path(__file__).resolve().parents[2]
DIGITS = str(ROOT / "examples" / "digits_ddp.py")
T = TypeVar("T")


def poll(what: str, fn: Callable[[], T | None], timeout: float, every: float = 0.1) -> T:
    """Call ``fn`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    return wait_until(fn, timeout=timeout, interval=every, what=what)


@dataclass
class Job:
    proc: subprocess.Popen[bytes]
    job_dir: Path
    out: Path
    extra: list[subprocess.Popen[bytes]]

    def master_address(self, timeout: float = 60.0) -> str:
        addr = self.job_dir / "master.addr"
        return poll("master.addr", lambda: addr.exists() and addr.read_text().strip(), timeout)

    @property
    def token_env(self) -> dict[str, str]:
        """The environment naming the run's token file (what another node of the job sets)."""
        return {ENV_MASTER_TOKEN_FILE: str(self.job_dir / TOKEN_FILE)}

    def client(self) -> MasterClient:
        token = master_token(self.token_env) if (self.job_dir / TOKEN_FILE).exists() else None
        address = self.master_address()
        return MasterClient(address, "e2e-test", timeout=5.0, retry_deadline=5.0, token=token)

    def progress(self) -> Progress | None:
        try:
            with self.client() as c:
                return c.get_progress()
        except Exception:
            return None

    def wait_progress(
        self, fraction: float, timeout: float = 60.0, world_size: int | None = None
    ) -> Progress:
        def ready() -> Progress | None:
            p = self.progress()
            if p is None or p.samples_total == 0:
                return None
            if world_size is not None and p.world_size != world_size:
                return None
            return p if p.samples_done >= fraction * p.samples_total else None

        return poll(f"{fraction:.0%} progress (world {world_size})", ready, timeout)

    def processes(self, marker: str) -> list[psutil.Process]:
        found = []
        for p in psutil.Process(self.proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if marker in " ".join(p.cmdline()):
                    found.append(p)
        return found

    def workers(self) -> list[psutil.Process]:
        return self.processes("flexjob.agent.bootstrap")

    def agents(self) -> list[psutil.Process]:
        """The agents: those ``flexjob run`` starts (``agent.process``) and ``flexjob agent``."""
        return [*self.processes("flexjob.agent.process"), *self.processes("-m flexjob agent ")]

    def wait(self, timeout: float = 90.0) -> int:
        return job_ended(self.proc, timeout, self.output)

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    def accuracy(self, *more_outputs: Path) -> float:
        """The last accuracy the example printed (in the run's or the given outputs)."""
        text = self.output() + "".join(p.read_text(errors="replace") for p in more_outputs)
        found = re.findall(r"accuracy=([0-9.]+)", text)
        assert found, f"no accuracy line in the output:\n{text}"
        return float(found[-1])

    def master_state(self) -> dict[str, object]:
        state: dict[str, object] = json.loads((self.job_dir / "master_state.json").read_text())
        return state

    def master_log(self) -> str:
        return (self.job_dir / "master.log").read_text(errors="replace")

    def stop(self) -> None:
        procs = [self.proc, *self.extra]
        family: list[psutil.Process] = []
        for p in procs:
            with contextlib.suppress(psutil.Error):
                family += psutil.Process(p.pid).children(recursive=True)
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for child in family:
            with contextlib.suppress(psutil.Error):
                child.kill()


def start_run(
    tmp: Path, *flags: str, script_args: tuple[str, ...] = (), script: str = DIGITS
) -> Job:
    job_dir = tmp / "job"
    out = tmp / "run.out"
    cmd = [
        sys.executable, "-m", "flexjob", "run", "--job-dir", str(job_dir), "--no-progress",
        *flags, script, *script_args,
    ]  # fmt: skip
    with out.open("wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=dict(os.environ))
    return Job(proc, job_dir, out, [])


def start_agent(
    job: Job, tmp: Path, node_id: str, script_args: tuple[str, ...] = (), script: str = DIGITS
) -> Path:
    out = tmp / f"{node_id}.out"
    cmd = [
        sys.executable, "-m", "flexjob", "agent", "-v", "--master", job.master_address(),
        "--node-id", node_id, "--run-dir", str(job.job_dir), script, *script_args,
    ]  # fmt: skip
    # A node joining the run holds its token (a master started on its own may have none).
    token = job.token_env if (job.job_dir / TOKEN_FILE).exists() else {}
    env = {**os.environ, **token}
    with out.open("wb") as f:
        job.extra.append(subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env))
    return out


@contextlib.contextmanager
def running(
    tmp: Path, *flags: str, script_args: tuple[str, ...] = (), script: str = DIGITS
) -> Iterator[Job]:
    job = start_run(tmp, *flags, script_args=script_args, script=script)
    try:
        yield job
    finally:
        job.stop()
