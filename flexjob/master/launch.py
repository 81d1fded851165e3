"""``spawn_master``: run a job master as a child process and find its address.

The config travels as JSON in ``<job-dir>/master_config.json``; the child runs
``python -m flexjob.master.process FILE`` (``flexjob master --config FILE`` without the CLI)
and writes ``<job-dir>/master.addr`` once it serves.
With ``wait=False`` (the config names its port) the parent gets the address at once and starts
its clients while the master starts (they retry until it serves); ``MasterProcess.wait_ready``
then confirms it serves.
For parents such as ``flexjob run`` and tests. Not for Kubernetes (the operator makes a pod).
"""

import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from flexjob.core.training.master_config import MasterConfig
from flexjob.master.process import command
from flexjob.master.state_file import write_atomic

#: Seconds a stopped master gets to save its state before SIGKILL.
MASTER_STOP_GRACE_S = 10.0


@dataclass
class MasterProcess:
    process: subprocess.Popen[bytes]
    address: str
    #: Written by the master once it serves (None: it already served when this was made).
    addr_path: Path | None = None
    log_name: str = ""

    def wait_ready(self, timeout: float = 60.0) -> str:
        """Wait until the master serves; its address. ``RuntimeError`` when it exited first,
        ``TimeoutError`` (after killing it) when it did not serve within ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while self.addr_path is not None:
            if self.addr_path.exists() and (address := self.addr_path.read_text().strip()):
                self.address, self.addr_path = address, None
                break
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"master exited with {self.process.returncode}; see {self.log_name}"
                )
            if time.monotonic() >= deadline:
                self.process.kill()
                self.process.wait()
                raise TimeoutError(f"master did not start within {timeout}s; see {self.log_name}")
            time.sleep(0.02)
        return self.address

    def stop(self, timeout: float = MASTER_STOP_GRACE_S) -> int:
        """SIGTERM, then SIGKILL after ``timeout``; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait()

    def kill(self) -> int:
        """SIGKILL: the master dies without any cleanup."""
        if self.process.poll() is None:
            self.process.kill()
        return self.process.wait()


def spawn_master(
    config: MasterConfig,
    *,
    timeout: float = 60.0,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    wait: bool = True,
) -> MasterProcess:
    """Start a master child process for ``config`` (``job_dir`` required); wait until it
    serves unless ``wait`` is false (then ``config.port`` must be set: the address is known
    before the master serves). ``log_path``: where its stdout/stderr go (default
    ``<job-dir>/master.log``)."""
    if not config.job_dir or config.addr_path is None:
        raise ValueError("job_dir is required to spawn a master process")
    if not wait and not config.port:
        raise ValueError("spawn_master(wait=False) needs the port in the config")
    job_dir = Path(config.job_dir)
    job_dir.mkdir(parents=True, exist_ok=True)
    config_path = job_dir / "master_config.json"
    write_atomic(config_path, config.to_json())
    config.addr_path.unlink(missing_ok=True)
    out = open(log_path or job_dir / "master.log", "ab")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen(  # its own session: a terminal's Ctrl-C reaches only the parent
        command(config_path),
        stdout=out,
        stderr=subprocess.STDOUT,
        env=dict(env or os.environ),
        start_new_session=True,
    )
    out.close()
    master = MasterProcess(
        proc, f"{config.public_host}:{config.port}", config.addr_path, str(out.name)
    )
    if wait:
        master.wait_ready(timeout)
    return master
