"""``flexjob run`` on one machine (``runner.config.RunConfig``): a master child process, N
agent child processes, a progress line, stop signals, the root-cause summary and the job's
exit code.

Every child runs in its own session, so a stop signal (SIGTERM, SIGINT, SIGHUP) reaches only
this process, which then stops the agents (which give their workers a grace period) and the
master in order. A master or agent that dies is started again within ``--max-restarts``
(``agent.run_supervisor``). When an agent gives up on the job, the others stop by themselves and the
earliest failure is printed (``agent.failure``). The job dir's path is printed at the start and
the end; a temporary one is removed after success only.
A run that starts its own master makes the job a token (``<job dir>/master.token``, 0600), so
no other local user can drive the job: the master and this process present it, and each agent
(with its workers) gets only its node's credential (``rpc.auth.node_env``), each PS replica its
node's credential and its PS secret (``rpc.ps_auth.ps_node_env``).
Not for Kubernetes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from flexjob.agent import failure
from flexjob.agent.run_supervisor import RunFailure, RunSupervisor
from flexjob.api import names
from flexjob.api.errors import FlexjobError
from flexjob.api.roles import PS_TYPE, command_of
from flexjob.core.replicas import short_replica_name
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.launch import MasterProcess, spawn_master
from flexjob.platform.ports import free_port
from flexjob.platform.stop_signals import StopRequested, raise_on_stop_signals
from flexjob.rpc.auth import job_token_env, master_token, new_token, node_env, write_token_file
from flexjob.runner.config import RunConfig, agent_command

if TYPE_CHECKING:  # gRPC and rich load once the master and the agents are started
    from flexjob.agent.progress import ProgressLine
    from flexjob.rpc.client import MasterClient

log = logging.getLogger(__name__)

#: Seconds an agent gets to stop its workers (which get their own grace) before SIGKILL.
AGENT_STOP_GRACE_S = 10.0
#: Seconds from the start of a run's stop until its parameter servers and master must be gone
#: too: they get what is left of it after the agents, but at least ``MIN_STOP_GRACE_S`` each.
#: So every process of a run is gone within ``STOP_BOUND_S + 2 * MIN_STOP_GRACE_S`` of a stop
#: signal (and the time the main thread takes to see it: a call of at most a few seconds).
STOP_BOUND_S = 15.0
MIN_STOP_GRACE_S = 2.0
#: Seconds between two looks at the master for an agent that gave up on the job.
FAILURE_POLL_S = 0.5
#: How long a run whose own nodes are done keeps its master up for the nodes that joined it
#: from elsewhere (``flexjob agent``) to finish; like torchrun's exit barrier.
OTHER_NODES_WAIT_S = 300.0


def _stop_all(procs: list[subprocess.Popen[bytes]], grace_s: float) -> None:
    """SIGTERM to all at once, then SIGKILL to those still there after ``grace_s``; each runs
    in its own session, so its whole process group is killed (what it started and did not
    stop with it included)."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(max(0.0, deadline - time.monotonic()))
        _kill_group(proc.pid)
        proc.wait()


def _kill_group(pgid: int) -> None:
    """SIGKILL the process group ``pgid`` (a child started in its own session): its leader
    if it is still there, and any process it left behind (gone already: nothing happens)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), MIN_STOP_GRACE_S)


def _exit_code(code: int | None) -> int:
    """A shell's view of a process's end: 128 + N when signal N killed it."""
    if code is None:
        return 1
    return 128 - code if code < 0 else code


def ps_command(master: str, index: int, num_ps: int, host: str = "127.0.0.1") -> list[str]:
    return [
        sys.executable, "-m", "flexjob", command_of(PS_TYPE), "--host", host,
        "--index", str(index), "--num-ps", str(num_ps), "--master", master,
    ]  # fmt: skip


def start_ps(
    master: str,
    num_ps: int,
    env: dict[str, str],
    host: str = "127.0.0.1",
    token: str | None = None,
) -> list[subprocess.Popen[bytes]]:
    """Start ``num_ps`` ``flexjob ps`` processes on ``host`` registering with ``master``; with
    the job's ``token``, each holds its node's credential and its PS secret instead of it
    (``rpc.ps_auth.ps_node_env``)."""
    from flexjob.rpc.ps_auth import ps_node_env  # grpc: only a run with a PS loads it

    return [
        subprocess.Popen(
            ps_command(master, i, num_ps, host),
            env=ps_node_env(env, token, short_replica_name(PS_TYPE, i), i) if token else env,
            start_new_session=True,
        )
        for i in range(num_ps)
    ]


def ps_env(master: str, num_ps: int, timeout: float = 120.0) -> dict[str, str]:
    """The environment that tells trainers where the PS set serves (once all registered)."""
    from flexjob.rpc.client import MasterClient
    from flexjob.rpc.ps_registry import resolve_ps

    with MasterClient(master, "launcher") as client:
        addresses = resolve_ps(client, num_ps, timeout=timeout)
    return {names.ENV_NUM_PS: str(num_ps), names.ENV_PS_ADDRESSES: ",".join(addresses)}


def run_job(opts: RunConfig) -> int:
    """Run the job to its end; returns its exit code (128 + N after stop signal N, 1 when
    a process of the run died past its restarts)."""
    with raise_on_stop_signals():
        job_dir = opts.master.job_dir or tempfile.mkdtemp(prefix=f"flexjob-{opts.job_name}-")
        if opts.join_master is None:  # else the master and its job dir are elsewhere
            _say(f"job dir {job_dir} (master log, timeline, default checkpoints)")
        code = 1
        try:
            with _job_token(opts, job_dir) as token:
                code = _Run(opts, job_dir, token).run()
            return code
        except StopRequested as stop:
            log.warning("%s: stopping the job", stop)
            code = stop.exit_code
            return code
        except RunFailure as exc:
            _say(f"job {opts.job_name} failed: {exc}")
            return 1
        finally:
            kept = opts.master.job_dir is not None or code != 0
            _end_job_dir(job_dir, kept=kept, quiet=opts.join_master is not None)


def _say(text: str) -> None:
    print(f"flexjob: {text}", file=sys.stderr, flush=True)


def _end_job_dir(job_dir: str, *, kept: bool, quiet: bool) -> None:
    """Keep the job dir of a run that failed or was stopped (its logs say why) and one the
    user named; remove a temporary one after success. Say which (unless ``quiet``)."""
    if not kept:
        shutil.rmtree(job_dir, ignore_errors=True)
    if not quiet:
        _say(
            f"job dir kept: {job_dir}"
            if kept
            else f"job dir {job_dir} removed (--job-dir keeps it)"
        )


class _Run:
    """One ``flexjob run``: its master (unless attached to one), parameter servers, agents
    (kept alive by a ``RunSupervisor``), progress line and timeline."""

    def __init__(self, opts: RunConfig, job_dir: str, token: str | None = None) -> None:
        self.opts = opts
        self.job_dir = job_dir
        self.token = token  # the job's, when this run made it: agents get node credentials
        self.master: MasterProcess | None = None
        self.master_config: MasterConfig | None = None
        #: Every agent process started, restarts included: those still running are stopped.
        self.agents: list[subprocess.Popen[bytes]] = []
        self.servers: list[subprocess.Popen[bytes]] = []
        self.supervisor: RunSupervisor | None = None
        self.progress: ProgressLine | None = None
        #: The agents' output comes through this process, so that the live progress line
        #: on a terminal is redrawn below each line of it, never glued onto it.
        self.piped = opts.progress and sys.stdout.isatty() and sys.stderr.isatty()
        self.readers: list[threading.Thread] = []

    def _relay(self, stream: IO[bytes] | None, err: bool) -> threading.Thread:
        """A thread copying an agent's ``stream`` line by line to ours (through the progress
        line once it is there)."""

        def copy() -> None:
            assert stream is not None
            for raw in stream:
                line = raw.decode(errors="replace")
                if self.progress is not None:
                    self.progress.emit(line, err)
                else:
                    out = sys.stderr if err else sys.stdout
                    out.write(line)
                    out.flush()

        thread = threading.Thread(target=copy, name="flexjob-agent-output", daemon=True)
        thread.start()
        return thread

    def drain(self, timeout_s: float = 2.0) -> None:
        """Wait (a little) for the agents' last lines, so the summary comes after them."""
        deadline = time.monotonic() + timeout_s
        for thread in self.readers:
            thread.join(max(0.0, deadline - time.monotonic()))

    def run(self) -> int:
        try:
            return self._run()
        finally:
            if self.progress is not None:
                self.progress.close()
            if self.supervisor is not None:
                self.master = self.supervisor.master  # the one it restarted, if it did
            deadline = time.monotonic() + STOP_BOUND_S
            _stop_all(self.agents, AGENT_STOP_GRACE_S)
            _stop_all(self.servers, _left(deadline))
            if self.master is not None:
                self.master.stop(_left(deadline))
                _kill_group(self.master.process.pid)
            if self.opts.plot:
                _plot(Path(self.job_dir), Path(self.opts.plot), self.opts.job_name)

    def _start_master(self) -> str:
        opts = self.opts
        if opts.join_master is not None:
            return opts.join_master
        host = opts.agent.address
        self.master_config = opts.master.with_overrides(
            job_dir=self.job_dir, host=host, port=free_port(host)
        )
        # Not waiting for it to serve: the agents start meanwhile (``_wait_master``).
        self.master = spawn_master(self.master_config, wait=False)
        address = self.master.address
        target = f"-m {opts.agent.target}" if opts.agent.module else opts.agent.target
        print(
            f"flexjob: master {address} (job {opts.job_name}); another node joins with: "
            f"{names.ENV_MASTER_TOKEN_FILE}={Path(self.job_dir) / names.MASTER_TOKEN_FILE} "
            f"flexjob agent --master {address} {target}",
            file=sys.stderr,
            flush=True,
        )
        return address

    def _wait_master(self) -> None:
        """Wait until the master started by ``_start_master`` serves."""
        if self.master is None:
            return
        try:
            self.master.wait_ready()
        except (RuntimeError, TimeoutError) as exc:
            raise RunFailure(f"the job master did not start: {exc}") from None

    def _start_agents(self, address: str, env: dict[str, str]) -> RunSupervisor:
        opts = self.opts

        def spawn_agent(index: int, node_id: str) -> subprocess.Popen[bytes]:
            cmd = agent_command(address, node_id, index, opts, self.job_dir)
            own = node_env(env, self.token, node_id) if self.token else env
            pipe = subprocess.PIPE if self.piped else None
            proc = subprocess.Popen(cmd, env=own, start_new_session=True, stdout=pipe, stderr=pipe)
            self.agents.append(proc)
            if self.piped:
                self.readers += [self._relay(proc.stdout, False), self._relay(proc.stderr, True)]
            return proc

        self.supervisor = RunSupervisor(
            address=address,
            master=self.master,
            master_config=self.master_config,
            spawn_agent=spawn_agent,
            nodes=opts.nodes_to_start,
            min_nodes=opts.min_nodes,
            nproc_per_node=opts.agent.nproc_per_node,
            max_restarts=opts.agent.max_restarts,
            first_index=opts.node_rank,
        )
        return self.supervisor

    def _run(self) -> int:
        opts = self.opts
        Path(self.job_dir).mkdir(parents=True, exist_ok=True)
        address = self._start_master()
        log.info("job %s: master at %s, job dir %s", opts.job_name, address, self.job_dir)
        env = {**os.environ, **opts.env}
        if num_ps := opts.master.ps.num_ps:
            self._wait_master()
            self.servers = start_ps(address, num_ps, env, opts.agent.address, self.token)
            env.update(ps_env(address, num_ps))
        supervisor = self._start_agents(address, env)
        # What only watches the job loads now: its children start without waiting for it.
        from flexjob.agent.progress import ProgressLine
        from flexjob.observe import timeline
        from flexjob.rpc.client import MasterClient

        self._wait_master()
        self.progress = progress = ProgressLine(
            address, enabled=opts.progress, min_nodes=opts.min_nodes
        )
        follower = timeline.Follower(Path(self.job_dir))
        with MasterClient(address, "flexjob-run", timeout=2.0, retry_deadline=2.0) as client:
            failed_at: float | None = None
            next_check = 0.0
            while supervisor.running:
                progress.update()
                for line in follower.new_lines():
                    print(f"flexjob: {line}", file=sys.stderr, flush=True)
                now = time.monotonic()
                if failed_at is None and now >= next_check:
                    next_check = now + FAILURE_POLL_S
                    with contextlib.suppress(FlexjobError):
                        failed_at = now if failure.failed(client) else None
                if failed_at is not None and now - failed_at > AGENT_STOP_GRACE_S:
                    break  # the agents did not stop by themselves: ``run`` stops them
                if failed_at is None:  # an agent that gave up is not restarted
                    supervisor.check(progress.finished)
                time.sleep(0.1)
            causes: list[failure.RootCause] = []
            with contextlib.suppress(FlexjobError):
                causes = failure.root_causes(client)
            codes = supervisor.codes()
            if not causes and 0 in codes:
                own = {slot.node_id for slot in supervisor.agents}
                _wait_other_nodes(client, own, OTHER_NODES_WAIT_S)
        self.drain(0.5)
        if causes:
            progress.close()
            print(causes[0].summary(), file=sys.stderr, flush=True)
            return _exit_code(causes[0].exit_code) or 1
        finished = progress.finished()
        self.drain()
        progress.close(final=True)
        if finished and 0 in codes:
            return 0
        return next((_exit_code(c) for c in codes if c != 0), 0)


@contextlib.contextmanager
def _job_token(opts: RunConfig, job_dir: str) -> Iterator[str | None]:
    """The token of a run that starts its own master, in ``<job dir>/master.token``: the one
    the environment gives (``FLEXJOB_MASTER_TOKEN`` or its file: the token the user shares
    with the other hosts' agents, as torchrun's multi-node runs share their rendezvous), else a
    new one. This process's environment names that file while the run lasts (its master, its
    PS replicas and its own clients read it there, ``rpc.auth.master_token``). None for a run
    that joins a master (``--master``): the environment's token, if any, is the one."""
    if opts.join_master is not None:
        yield None
        return
    token = master_token() or new_token()
    path = write_token_file(Path(job_dir) / names.MASTER_TOKEN_FILE, token)
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(job_token_env(saved, path))
    try:
        yield token
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _wait_other_nodes(client: MasterClient, own: set[str], timeout: float) -> None:
    """Keep the master up while nodes that joined from elsewhere still run (for at most
    ``timeout``): stopping it under them would leave their last calls unanswered and their
    agents retrying a master that is gone. Each leaves the list when it tells the master it
    succeeded, or when the master declares it dead (its stream broke, or its heartbeat timed
    out)."""
    deadline = time.monotonic() + timeout
    told = False
    while True:
        try:
            others = [n for n in client.running_nodes() if n not in own]
        except FlexjobError:
            return  # the master is gone: nobody left to keep it for
        if not others:
            return
        if time.monotonic() >= deadline:
            log.warning("still running after %.0f s: %s; stopping the master", timeout, others)
            return
        if not told:
            told = True
            waiting = ", ".join(others)
            print(f"flexjob: waiting for node(s) {waiting} to finish", file=sys.stderr, flush=True)
        time.sleep(0.1)


def _plot(job_dir: Path, path: Path, title: str) -> None:
    from flexjob.observe import timeline
    from flexjob.observe.plot import save_plot

    save_plot(timeline.read(job_dir), path, title)
    print(f"flexjob: timeline plot written to {path}", file=sys.stderr, flush=True)
