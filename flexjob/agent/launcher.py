"""``flexjob run`` on one machine: a master child process, N agent child processes, a
progress line, Ctrl-C handling and the job's exit code.

Every child runs in its own session, so Ctrl-C reaches only this process, which then stops
the agents (which stop their workers) and the master in order. Not for Kubernetes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from flexjob.agent.progress import ProgressLine
from flexjob.api import names
from flexjob.observe import timeline

log = logging.getLogger(__name__)


def parse_nnodes(text: str) -> tuple[int, int]:
    """``"2"`` → (2, 2); ``"1:3"`` → (1, 3). Errors name the option."""
    lo_s, sep, hi_s = text.partition(":")
    try:
        lo = int(lo_s)
        hi = int(hi_s) if sep else lo
    except ValueError:
        raise ValueError(f"--nnodes must be N or MIN:MAX with integers, got {text!r}") from None
    if lo < 1 or hi < lo:
        raise ValueError(f"--nnodes must satisfy 1 <= MIN <= MAX, got {text!r}")
    return lo, hi


@dataclass(frozen=True, slots=True)
class RunConfig:
    target: str
    args: tuple[str, ...] = ()
    module: bool = False
    min_nodes: int = 1
    max_nodes: int = 1
    start_nodes: int | None = None
    nproc_per_node: int = 1
    max_restarts: int = 3
    monitor_interval: float = 0.5
    job_name: str = "job"
    master: str | None = None
    job_dir: str | None = None
    last_call_timeout: float = 1.0
    heartbeat_timeout: float = 10.0
    hang_timeout: float = 180.0
    progress: bool = True
    plot: str | None = None  # a PNG of the job's timeline, written when the run ends
    env: dict[str, str] = field(default_factory=dict)
    num_ps: int = 0  # parameter-server replicas to start beside the master (`--ps N`)

    def __post_init__(self) -> None:
        if self.hang_timeout < 0:
            raise ValueError(f"--hang-timeout must be >= 0 (0 = off), got {self.hang_timeout}")

    @property
    def nodes_to_start(self) -> int:
        return self.start_nodes if self.start_nodes is not None else self.min_nodes


def agent_command(
    master: str, node_id: str, index: int, opts: RunConfig, run_dir: str
) -> list[str]:
    cmd = [
        sys.executable, "-m", "flexjob", "agent",
        "--master", master,
        "--node-id", node_id,
        "--replica-index", str(index),
        "--job-name", opts.job_name,
        "--nproc-per-node", str(opts.nproc_per_node),
        "--max-restarts", str(opts.max_restarts),
        "--monitor-interval", str(opts.monitor_interval),
        "--run-dir", run_dir,
        "--hang-timeout", str(opts.hang_timeout),
    ]  # fmt: skip
    if opts.module:
        cmd.append("-m")
    return [*cmd, opts.target, *opts.args]


def ps_command(master: str, index: int, num_ps: int) -> list[str]:
    return [
        sys.executable, "-m", "flexjob", "ps",
        "--index", str(index), "--num-ps", str(num_ps), "--master", master,
    ]  # fmt: skip


def start_ps(master: str, num_ps: int, env: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    """Start ``num_ps`` ``flexjob ps`` processes registering with ``master``."""
    return [
        subprocess.Popen(ps_command(master, i, num_ps), env=env, start_new_session=True)
        for i in range(num_ps)
    ]


def ps_env(master: str, num_ps: int, timeout: float = 120.0) -> dict[str, str]:
    """The environment that tells trainers where the PS set serves (once all registered)."""
    from flexjob.rpc.client import MasterClient
    from flexjob.rpc.ps_registry import resolve_ps

    with MasterClient(master, "launcher") as client:
        addresses = resolve_ps(client, num_ps, timeout=timeout)
    return {names.ENV_NUM_PS: str(num_ps), names.ENV_PS_ADDRESSES: ",".join(addresses)}


def _stop(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()


def run_job(opts: RunConfig) -> int:
    """Run the job to its end; returns its exit code (130 after Ctrl-C)."""
    from flexjob.agent.run_supervisor import RunFailure, RunSupervisor
    from flexjob.core.master_config import MasterConfig
    from flexjob.master.launch import MasterProcess, spawn_master

    job_dir = opts.job_dir or tempfile.mkdtemp(prefix=f"flexjob-{opts.job_name}-")
    Path(job_dir).mkdir(parents=True, exist_ok=True)
    supervisor: RunSupervisor | None = None
    servers: list[subprocess.Popen[bytes]] = []
    progress: ProgressLine | None = None
    config: MasterConfig | None = None
    master_proc: MasterProcess | None = None
    try:
        if opts.master is None:
            config = MasterConfig(
                job_name=opts.job_name,
                job_dir=job_dir,
                min_nodes=opts.min_nodes,
                max_nodes=opts.max_nodes,
                last_call_timeout=opts.last_call_timeout,
                heartbeat_timeout=opts.heartbeat_timeout,
            )
            master_proc = spawn_master(config)
            address = master_proc.address
        else:
            address = opts.master
        log.info("job %s: master at %s, job dir %s", opts.job_name, address, job_dir)
        env = {**os.environ, **opts.env}
        if opts.num_ps:
            servers = start_ps(address, opts.num_ps, env)
            env.update(ps_env(address, opts.num_ps))

        def spawn_agent(index: int, node_id: str) -> subprocess.Popen[bytes]:
            cmd = agent_command(address, node_id, index, opts, job_dir)
            return subprocess.Popen(cmd, env=env, start_new_session=True)

        supervisor = RunSupervisor(
            address=address,
            master=master_proc,
            master_config=config,
            spawn_agent=spawn_agent,
            nodes=opts.nodes_to_start,
            min_nodes=opts.min_nodes,
            nproc_per_node=opts.nproc_per_node,
            max_restarts=opts.max_restarts,
        )
        progress = ProgressLine(address, enabled=opts.progress)
        follower = timeline.Follower(Path(job_dir))
        while supervisor.running:
            progress.update()
            supervisor.check(progress.finished)
            for line in follower.new_lines():
                print(f"flexjob: {line}", file=sys.stderr, flush=True)
            time.sleep(0.2)
        codes = supervisor.codes()
        finished = progress.finished()
        progress.close(final=True)
        if finished and 0 in codes:
            return 0
        return next((c for c in codes if c != 0), 0)
    except RunFailure as exc:
        log.error("job %s failed: %s", opts.job_name, exc)
        return 1
    except KeyboardInterrupt:
        log.warning("interrupted: stopping the job")
        return 130
    finally:
        if progress is not None:
            progress.close()
        if supervisor is not None:
            for slot in supervisor.agents:
                _stop(slot.proc, 10.0)
            master_proc = supervisor.master
        for server in servers:
            _stop(server, 10.0)
        if master_proc is not None:
            master_proc.stop()
        if opts.plot:
            _plot(Path(job_dir), Path(opts.plot), opts.job_name)


def _plot(job_dir: Path, path: Path, title: str) -> None:
    from flexjob.observe.plot import save_plot

    save_plot(timeline.read(job_dir), path, title)
    print(f"flexjob: timeline plot written to {path}", file=sys.stderr, flush=True)
