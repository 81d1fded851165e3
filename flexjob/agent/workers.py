"""Worker processes of one node: start them through the bootstrap, watch them, stop them.

Each worker is a child process that dies with the agent (the bootstrap sets
``PR_SET_PDEATHSIG`` on Linux), so a killed node takes its training processes along. No
``preexec_fn``: forking an agent that runs gRPC threads is not safe. Not for deciding when to
restart (the agent does). ``WorkerState`` is the explicit state machine of one worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from flexjob.agent.bootstrap import NO_TORCH, READY_SUFFIX
from flexjob.agent.config import AgentConfig, run_dir_of
from flexjob.agent.flash_saver import FlashSaver
from flexjob.agent.hang import collective_timeout_for
from flexjob.agent.output import OutputConfig, WorkerOutput
from flexjob.agent.target import preimport_torch
from flexjob.agent.torchrun_env import error_message, error_path, launch_env
from flexjob.api import names
from flexjob.trainer.status import TrainerStatus, read_status

log = logging.getLogger(__name__)

#: Seconds a stopped trainer gets (to save a checkpoint) between SIGTERM and SIGKILL.
WORKER_STOP_GRACE_S = 5.0


class WorkerState(StrEnum):
    """STARTING (bootstrap importing) → READY (waiting for its world) → RUNNING →
    SUCCEEDED | FAILED; STOPPED when the agent ended it."""

    STARTING = "starting"
    READY = "ready"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"

    @property
    def finished(self) -> bool:
        return self in (WorkerState.SUCCEEDED, WorkerState.FAILED, WorkerState.STOPPED)


class Worker:
    """One training process of this node; its output goes through ``WorkerOutput``."""

    def __init__(
        self,
        local_rank: int,
        env: dict[str, str],
        status_file: Path,
        node_id: str = "",
        output: OutputConfig | None = None,
        preimport_torch: bool = True,
        warm: subprocess.Popen[bytes] | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> None:
        """``warm``: a bootstrap a warm spare started (``agent.spare``), ready and waiting:
        adopted instead of starting one; ``env`` then travels with its start message.
        ``pass_fds``: descriptors a started bootstrap inherits (none reach a warm one).
        """
        self.local_rank = local_rank
        self.status_file = status_file
        self.state = WorkerState.STARTING
        self.exit_code: int | None = None
        #: Global rank in the world the agent handed it (None: it forms its worlds itself).
        self.rank: int | None = None
        self._node_id = node_id or env.get(names.ENV_NODE_ID, "node")
        self._status_seen = (0.0, -1)
        self._ready_file = Path(str(status_file) + READY_SUFFIX)
        #: Its TORCHELASTIC_ERROR_FILE (``error()`` reads it once it failed).
        self.error_file = error_path(status_file)
        self._terminated = False  # SIGTERM sent (``terminate``)
        for stale in (status_file, self._ready_file, self.error_file):
            stale.unlink(missing_ok=True)
        #: Called (on another thread) as soon as the process ended, so that its agent need
        #: not wait for its next poll (``ElasticAgent`` sets it).
        self.on_exit: Callable[[], None] | None = None
        self.output = WorkerOutput(
            output or OutputConfig(), self._node_id, local_rank, self.label, self._ended
        )
        #: The whole environment its script gets (a warm spare's bootstrap was started with
        #: the spare's own); None: the one it was started with, plus its world.
        self._start_env: dict[str, str] | None = None
        if warm is not None:
            self.proc = warm
            self._start_env = env
            self.state = WorkerState.READY
        else:
            flags = () if preimport_torch else (NO_TORCH,)
            self.proc = spawn_bootstrap(env, flags, pass_fds)
        self.output.start(self.proc.stdout, self.proc.stderr)

    def _ended(self) -> None:
        """Its stderr closed: reap the process (it is exiting), then tell the agent."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(1.0)
        if self.on_exit is not None:
            self.on_exit()

    def known_rank(self) -> int | None:
        """Its global rank: the one the agent gave it, else the last its trainer published
        (read at most once a second), else None."""
        if self.rank is not None:
            return self.rank
        checked, known = self._status_seen
        if time.monotonic() - checked > 1.0:
            status = self.status()
            known = status.rank if status is not None else -1
            self._status_seen = (time.monotonic(), known)
        return known if known >= 0 else None

    def label(self) -> str:
        """``[worker-0/rank1]`` (torchrun marks lines ``[rank1]``); the local rank until the
        process knows its global one."""
        rank = self.known_rank()
        where = f"rank{rank}" if rank is not None else f"local{self.local_rank}"
        return f"[{self._node_id}/{where}]"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> WorkerState:
        """Update and return the state from the process and its files."""
        if self.state.finished:
            return self.state
        code = self.proc.poll()
        if code is not None:
            self.output.join()
            self.exit_code = code
            self.state = WorkerState.SUCCEEDED if code == 0 else WorkerState.FAILED
        elif self.state is WorkerState.STARTING and self._ready_file.exists():
            self.state = WorkerState.READY
        return self.state

    def start(self, env: dict[str, str], target: str, args: list[str], module: bool) -> None:
        """Hand the world to the bootstrap: it runs the script from here on."""
        message: dict[str, object] = {"env": env, "target": target, "args": args, "module": module}
        if self._start_env is not None:
            message.update(env={**self._start_env, **env}, replace_env=True, cwd=os.getcwd())
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.close()
        except BrokenPipeError:
            log.warning("worker %d exited before it could start", self.local_rank)
        if not self.state.finished:
            self.state = WorkerState.RUNNING

    def status(self) -> TrainerStatus | None:
        return read_status(self.status_file)

    def error(self) -> str | None:
        """The error it recorded in its TORCHELASTIC_ERROR_FILE (``Type: text``), or None."""
        return error_message(self.error_file)

    def kill(self) -> None:
        """SIGKILL (also ends a stopped process) and reap it."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()

    def stop(self, grace_s: float = WORKER_STOP_GRACE_S) -> None:
        """SIGTERM, then SIGKILL after ``grace_s``."""
        self.terminate()
        self.finish_stop(time.monotonic() + grace_s)

    def terminate(self) -> None:
        """SIGTERM (once): the first half of ``stop``."""
        if self.proc.poll() is None and not self._terminated:
            self._terminated = True
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)

    def finish_stop(self, deadline: float) -> None:
        """Wait for the process to end until ``deadline`` (``time.monotonic()``), SIGKILL it
        then, and mark it stopped: the second half of ``stop``."""
        if self.proc.poll() is None:
            try:
                self.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                self.proc.wait()
        if not self.state.finished:
            self.exit_code = self.proc.returncode
            self.state = WorkerState.STOPPED
        self.output.join()
        for leftover in (self.status_file, self._ready_file, self.error_file):
            leftover.unlink(missing_ok=True)


def stop_workers(workers: list[Worker], grace_s: float = WORKER_STOP_GRACE_S) -> None:
    """Stop ``workers`` together: all get SIGTERM at once and the same ``grace_s`` before
    SIGKILL, so a node with N workers stops in one grace period, not N."""
    for w in workers:
        w.terminate()
    deadline = time.monotonic() + grace_s
    for w in workers:
        w.finish_stop(deadline)


def interface_of(address: str) -> str | None:
    """The network interface that holds ``address`` (a host name is resolved), for gloo to
    bind: otherwise gloo binds what this machine's host name resolves to, often a loopback
    address that other hosts cannot reach. None on loopback, or when no interface has it."""
    import ipaddress
    import socket

    import psutil

    try:
        ip = ipaddress.ip_address(socket.getaddrinfo(address, None)[0][4][0])
    except (OSError, ValueError):
        return None
    if ip.is_loopback:
        return None
    for name, addrs in psutil.net_if_addrs().items():
        if any(a.address.split("%")[0] == str(ip) for a in addrs):
            return name
    return None


def spawn_worker(
    config: AgentConfig,
    local_rank: int,
    run_dir: str,
    flash: FlashSaver,
    warm: subprocess.Popen[bytes] | None = None,
    restart_count: int = 0,
) -> Worker:
    """Start the worker of ``local_rank`` through the bootstrap with the agent's environment
    for it (or adopt ``warm``, a warm spare's, whose environment then travels with its start
    message); ``restart_count``: the node's worker group restarts so far (torchrun's
    TORCHELASTIC_RESTART_COUNT). Needs nothing from the master: an agent starts its workers
    first."""
    c = config
    env = {**os.environ, **c.env}
    env.update(
        {
            names.ENV_MASTER: c.master,
            names.ENV_JOB_NAME: c.job_name,
            names.ENV_REPLICA_TYPE: c.replica_type,
            names.ENV_REPLICA_INDEX: str(c.replica_index),
            names.ENV_NODE_ID: c.node_id,
            names.ENV_LOCAL_RANK: str(local_rank),
            names.ENV_LOCAL_WORLD_SIZE: str(c.nproc_per_node),
        }
    )
    env[names.ENV_AGENT_PID] = str(os.getpid())
    interface = interface_of(c.address)
    if interface is not None and names.ENV_GLOO_SOCKET_IFNAME not in env:
        env[names.ENV_GLOO_SOCKET_IFNAME] = interface
    collective = collective_timeout_for(c.hang_timeout)
    if collective is not None and names.ENV_COLLECTIVE_TIMEOUT not in env:
        env[names.ENV_COLLECTIVE_TIMEOUT] = str(collective)
    path = status_path(run_dir, c.node_id, local_rank)
    env[names.ENV_STATUS_FILE] = str(path)
    torchrun = launch_env(
        run_id=c.job_name,
        max_restarts=c.max_restarts,
        restart_count=restart_count,
        error_file=str(error_path(path)),
        nproc_per_node=c.nproc_per_node,
        given=env,
    )
    env.update(torchrun)
    if warm is not None:  # started before this agent: no socket of ours to inherit
        env.update(flash.worker_env(local_rank, run_dir, channel=False)[0])
        return Worker(local_rank, env, path, c.node_id, c.output, warm=warm)
    torch_first = preimport_torch(c.target, c.module, env)
    flash_env, fd = flash.worker_env(local_rank, run_dir)
    env.update(flash_env)
    fds = () if fd is None else (fd,)
    try:
        return Worker(local_rank, env, path, c.node_id, c.output, torch_first, pass_fds=fds)
    finally:
        flash.started(fd)


def start_first_workers(config: AgentConfig) -> tuple[FlashSaver, list[Worker]]:
    """A node's workers, started before its agent loads the rest (gRPC, metrics): their
    torch import begins at once (``ElasticAgent(first=...)`` adopts them)."""
    flash = FlashSaver(config.node_id)
    run_dir = run_dir_of(config)
    return flash, [spawn_worker(config, i, run_dir, flash) for i in range(config.nproc_per_node)]


def spawn_bootstrap(
    env: dict[str, str], flags: tuple[str, ...] = (), pass_fds: tuple[int, ...] = ()
) -> subprocess.Popen[bytes]:
    """A training process that runs ``agent.bootstrap`` (``flags``: its options) and waits
    for its start message on stdin (``pass_fds``: descriptors it inherits)."""
    return subprocess.Popen(
        [sys.executable, "-m", "flexjob.agent.bootstrap", *flags],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=pass_fds,
    )


def wait_ready(workers: list[Worker], timeout_s: float, poll_s: float = 0.02) -> bool:
    """True once every worker imported torch; False if one exited or time ran out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        states = [w.poll() for w in workers]
        if any(s.finished for s in states):
            return False
        if all(s is WorkerState.READY for s in states):
            return True
        time.sleep(poll_s)
    return False


STATUS_SUFFIX = ".status.json"


def status_path(run_dir: str, node_id: str, local_rank: int) -> Path:
    """Where this agent's worker of ``local_rank`` writes its status:
    ``<run dir>/<node>.<local rank>.<agent pid>.status.json`` (``node_workers`` reads it)."""
    path = Path(run_dir) / f"{node_id}.{local_rank}.{os.getpid()}{STATUS_SUFFIX}"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    """A training process of a node as its agent's status file names it."""

    node_id: str
    local_rank: int
    agent_pid: int
    pid: int  # the training process (the last one that wrote the file)


def node_workers(run_dir: str | os.PathLike[str], node_id: str) -> list[WorkerRecord]:
    """The training processes of ``node_id`` whose status files are in ``run_dir``: a
    process's identity from outside (a benchmark, a test), not from its command line. A
    record may name a process that has died since (its agent restarts it under the same
    file); whoever signals it checks that it lives."""
    found = []
    head = f"{node_id}."
    for path in Path(run_dir).glob(f"{node_id}.*{STATUS_SUFFIX}"):
        rest = path.name[len(head) : -len(STATUS_SUFFIX)].split(".")
        if len(rest) != 2 or not all(part.isdigit() for part in rest):
            continue  # another node whose id starts with this one's, or a temporary file
        status = read_status(path)
        if status is not None:
            found.append(WorkerRecord(node_id, int(rest[0]), int(rest[1]), status.pid))
    return sorted(found, key=lambda r: (r.local_rank, r.agent_pid))
