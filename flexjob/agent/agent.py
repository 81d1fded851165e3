"""``ElasticAgent``: runs one node's training processes for the job master.

The agent starts its workers through the bootstrap (torch imported before the node joins),
joins the rendezvous, hands each worker its world, then supervises: heartbeats, resource and
throughput stats, restarts of failed workers up to ``max_restarts``. Workers that use the
trainer helpers re-form their world in place on a world change; other workers are restarted
with the new world, as torchrun does. Not for choosing ranks or shards (the master does).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time

from flexjob.agent import failure, observing
from flexjob.agent.config import AgentConfig, run_dir_of
from flexjob.agent.flash_saver import FlashSaver
from flexjob.agent.hang import stalled_for
from flexjob.agent.membership import Membership
from flexjob.agent.monitor import ResourceMonitor
from flexjob.agent.oom import memory_limited, oom_kills
from flexjob.agent.torchrun_env import OMP_NOTICE, explained, permanent, sets_omp_threads
from flexjob.agent.workers import Worker, WorkerState, spawn_worker, stop_workers, wait_ready
from flexjob.api import names
from flexjob.api.errors import AgentError, JobFailedElsewhere, NodeFencedError
from flexjob.api.roles import type_named
from flexjob.core.training.owned_keys import incarnation_name
from flexjob.platform.ports import free_port
from flexjob.platform.stop_signals import StopRequested, raise_on_stop_signals
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef, NodeWorld
from flexjob.trainer.world import Generation, NodeIdentity, world_env

log = logging.getLogger(__name__)

STATS_INTERVAL_S = 1.0
#: A failure repeats "in a row" only within this many seconds of the restart before it: the
#: same error after a long healthy stretch is retried as usual.
REPEAT_WINDOW_S = 120.0
#: A heartbeat slower than this means the master was unreachable (the client retried).
MASTER_SLOW_S = 2.0


#: The exit code of a node whose worker the kernel's OOM killer ended (128 + SIGKILL, as a
#: container killed for its memory limit exits).
OOM_EXIT_CODE = 128 + signal.SIGKILL
#: The exit code of an agent that stopped because another node's agent gave up on the job.
EXIT_JOB_FAILED_ELSEWHERE = 1
#: The exit code of a node whose worker failed with an error no restart can fix
#: (``torchrun_env.permanent``): 126, which the operator never retries (like a missing script).
EXIT_PERMANENT = 126


class ElasticAgent:
    def __init__(
        self,
        config: AgentConfig,
        client: MasterClient | None = None,
        warm: list[subprocess.Popen[bytes]] | None = None,
        first: tuple[FlashSaver, list[Worker]] | None = None,
    ) -> None:
        """``warm``: a warm spare's ready bootstraps (``agent.spare``), one per local rank,
        adopted as the first workers instead of starting new ones. ``first``: the workers
        ``start_first_workers`` started before this agent was imported, and their saver."""
        self.config = config
        self._warm = list(warm or [])
        self._first = first[1] if first is not None else []
        self.node = NodeRef(config.node_id, type_named(config.replica_type), config.replica_index)
        self.client = client or MasterClient(config.master, self.node)
        self.workers: list[Worker] = []
        self.restarts = 0
        #: Restarts and re-forms of this node's worker group (TORCHELASTIC_RESTART_COUNT).
        self.group_restarts = 0
        #: OOM kills in this container's memory cgroup already accounted for.
        self._oom_kills = oom_kills() or 0
        self.round = -1
        self._monitor = ResourceMonitor()
        self._flash = first[0] if first is not None else FlashSaver(config.node_id)
        self._step_clock = observing.StepClock()
        self._last_stats = 0.0
        self._stopping = threading.Event()
        self._worker_ended = threading.Event()
        self._job_in_place = False
        self._job_failed = threading.Event()
        self._last_failure: tuple[int | None, str] | None = None
        self._restarted_at = 0.0
        self._member = Membership(self.client)
        self._checkpoint_dir: str | None = None
        self._beat_since: float | None = None  # time.time() the heartbeat in flight began
        self._master_back_at = 0.0  # time.time() a slow or failed heartbeat ended
        self._run_dir = run_dir_of(config)
        self._succeeded = False  # the node ended with all its workers' exit codes 0

    # ---- entry point ----
    def run(self) -> int:
        """Run until the workers finish; returns the node's exit code (128 + N after stop
        signal N: its workers get SIGTERM and a grace period first)."""
        beat = threading.Thread(target=self._heartbeats, name="flexjob-heartbeat", daemon=True)
        self.client.attach_in_background(self._stopping)
        with raise_on_stop_signals():
            beat.start()
            endpoint = observing.serve(self._run_dir, self.config.node_id)
            try:
                return self._supervise()
            except StopRequested as stop:
                log.warning("node %s: %s, stopping its workers", self.config.node_id, stop)
                return stop.exit_code
            except JobFailedElsewhere:
                log.warning("node %s: another node gave up on the job", self.config.node_id)
                return EXIT_JOB_FAILED_ELSEWHERE
            finally:
                if endpoint is not None:
                    endpoint.stop()
                self._stopping.set()
                stop_workers(self.workers)
                self._flash.close()
                beat.join(timeout=5.0)
                if self._succeeded:
                    self._tell_succeeded()
                self.client.close()

    def _tell_succeeded(self) -> None:
        """Tell the master this node leaves after success (after its last heartbeat, before
        its stream ends): the others' world is not re-formed."""
        try:
            self.client.node_succeeded()
        except Exception as exc:  # the master is gone too: nobody to re-form anything
            node = self.config.node_id
            log.info("node %s: could not tell the master it succeeded: %s", node, exc)

    # ---- worker life ----
    def _identity(self, local_rank: int) -> NodeIdentity:
        c = self.config
        return NodeIdentity(
            c.node_id, c.replica_type, c.replica_index, local_rank, c.nproc_per_node, c.master
        )

    def _spawn(self, local_rank: int) -> Worker:
        warm = self._warm.pop(0) if self._warm else None
        worker = spawn_worker(
            self.config, local_rank, self._run_dir, self._flash, warm, self.group_restarts
        )
        worker.on_exit = self._worker_ended.set
        return worker

    def _start_env(self) -> dict[str, str]:
        """What a worker's environment gets when it starts its script (not when it is
        spawned: the workers import torch meanwhile, before the agent asks the master): the
        membership it starts under, which its calls carry (``core.training.fencing``), and
        the default checkpoint directory unless one is set."""
        env = {names.ENV_INCARNATION: str(self._member.incarnation)}
        if names.ENV_CHECKPOINT_DIR not in {**os.environ, **self.config.env}:
            env[names.ENV_CHECKPOINT_DIR] = self._default_checkpoint_dir()
        return env

    def _default_checkpoint_dir(self) -> str:
        """``<run dir>/checkpoints/<job incarnation>``: shared by this job's restarts, never
        by another job that re-uses the directory or the name."""
        if self._checkpoint_dir is None:
            incarnation = incarnation_name(self.client.kv_get(names.KV_INCARNATION))
            self._checkpoint_dir = os.path.join(self._run_dir, "checkpoints", incarnation)
        return self._checkpoint_dir

    def _join_and_start(self, workers: list[Worker]) -> None:
        """Wait for ``workers`` to be ready, rendezvous, and start them in the new world."""
        c = self.config
        if not wait_ready(workers, c.rendezvous_timeout):
            return  # a worker died while starting: the supervision loop sees it
        if self._in_place():
            # The job's workers use the trainer helpers: they join when their script is
            # ready, so the running workers never wait for this one's imports and setup.
            self._job_in_place = True
            for w in workers:
                w.start(self._start_env(), c.target, list(c.args), c.module)
            log.info(
                "node %s started %d worker(s) that join by themselves", c.node_id, len(workers)
            )
            return
        self.client.join(f"{c.address}:0", c.nproc_per_node)
        world = self._wait_world()
        gen = Generation(
            world.round, world.rank, world.world_size, world.store_address, world.store_prefix
        )
        torch_master = self._torch_master(world)
        for w in workers:
            ident = self._identity(w.local_rank)
            env = {**self._start_env(), **world_env(gen, ident, self.group_restarts)}
            env[names.ENV_MASTER_ADDR], _, env[names.ENV_MASTER_PORT] = torch_master.rpartition(":")
            w.rank = gen.rank(w.local_rank, c.nproc_per_node)
            w.start(env, c.target, list(c.args), c.module)
        self.round = world.round
        log.info("node %s started %d worker(s) in round %d", c.node_id, len(workers), world.round)

    def _wait_world(self) -> NodeWorld:
        deadline = time.monotonic() + self.config.rendezvous_timeout
        while time.monotonic() < deadline:
            self._check_job()
            world = self.client.get_world()
            if world.complete and world.rank >= 0:
                return world
            time.sleep(0.05)
        raise AgentError(f"no rendezvous within {self.config.rendezvous_timeout}s")

    def _torch_master(self, world: NodeWorld) -> str:
        """MASTER_ADDR:MASTER_PORT for scripts that call init_process_group('env://'): a fresh
        port per round on the rank-0 node, published through the master's KV store."""
        key = f"{world.store_prefix}{names.KV_TORCH_MASTER}"
        if world.rank == 0:
            value = f"{self.config.address}:{free_port(self.config.address)}"
            self.client.kv_set(key, value.encode())
            return value
        deadline = time.monotonic() + self.config.rendezvous_timeout
        while time.monotonic() < deadline:
            self._check_job()
            got = self.client.kv_get(key)
            if got is not None:
                return got.decode()
            if self.client.kv_get(names.KV_IN_PLACE) is not None:
                # This node joined just before the running workers turned out to re-form
                # worlds themselves: their agents publish no torch master; the trainer uses
                # the round's store.
                self._job_in_place = True
                return world.store_address
            time.sleep(0.05)
        raise AgentError(f"rank-0 node did not publish {key}")

    def _heartbeats(self) -> None:
        """Background thread: heartbeats never stop while the main loop waits for something."""
        while not self._stopping.wait(self.config.monitor_interval):
            self._beat_since = started = time.time()
            try:
                self._member.beat()
                if failure.failed(self.client):
                    self._job_failed.set()
            except Exception as exc:
                log.debug("heartbeat failed: %s", exc)
                self._master_back_at = time.time()
            finally:
                self._beat_since = None
            if time.time() - started > MASTER_SLOW_S:  # it retried: the master was away
                self._master_back_at = time.time()

    def _rejoin_fenced(self) -> None:
        """The master declared this node dead (its heartbeats did not reach it in time) and
        refuses its calls: stop the workers (their work since the last accepted report is not
        reported: the master handed their shards out again), join again as a new member, and
        start fresh workers in the next world (``core.training.fencing``)."""
        node, was = self.config.node_id, self._member.incarnation
        log.warning("node %s: declared dead by the master (incarnation %d): rejoining", node, was)
        stop_workers(self.workers)
        self._member.rejoin()
        log.info("node %s joined again as incarnation %d", node, self._member.incarnation)
        self.round = -1
        self._restart(self.workers)

    def _check_job(self) -> None:
        """Raise ``JobFailedElsewhere`` once another node's agent gave up on the job."""
        if self._job_failed.is_set():
            raise JobFailedElsewhere("another node gave up on the job")

    def _in_place(self) -> bool:
        """True when the running workers re-form worlds themselves (trainer helpers)."""
        if self._job_in_place:
            return True
        if self.client.kv_get(names.KV_IN_PLACE) is not None:
            self._job_in_place = True
            return True
        alive = [w for w in self.workers if not w.state.finished]
        statuses = [w.status() for w in alive]
        return bool(alive) and all(s is not None and s.in_place for s in statuses)

    # ---- supervision ----
    def _supervise(self) -> int:
        c = self.config
        if sets_omp_threads(c.nproc_per_node, {**os.environ, **c.env}):
            log.warning(OMP_NOTICE)
        # The workers import torch while this agent reaches the master.
        self.workers = self._first or [self._spawn(i) for i in range(c.nproc_per_node)]
        for w in self._first:  # started before this agent: it hears of their end from now on
            w.on_exit = self._worker_ended.set
        self._announce_start()
        self._member.beat()  # a member before its workers call the master
        self._join_and_start(self.workers)
        while True:
            # A worker that ends wakes the loop at once: its failure reaches the master (its
            # peers wait for that to re-form) without waiting for the next poll.
            if self._worker_ended.wait(c.monitor_interval):
                self._worker_ended.clear()
            states = [w.poll() for w in self.workers]
            if not any(s is WorkerState.FAILED for s in states):
                self._check_job()
            if all(s is WorkerState.SUCCEEDED for s in states):
                self._succeeded = True
                return 0
            self._kill_hung()
            failed = [w for w in self.workers if w.state is WorkerState.FAILED]
            if self._member.fenced(self._member.beat_now() if failed else self._member.reply):
                # (a worker refused by the master fails: no failure of its own)
                self._rejoin_fenced()
                continue
            if failed:
                code = self._on_failure(failed)
                if code is not None:
                    return code
                continue
            reply = self._member.reply
            if reply is not None and reply.excluded:
                return self._leave_excluded()
            if reply is not None and reply.job_finished and self._never_joined():
                log.info("node %s: the job's data is done before its workers joined", c.node_id)
                self._succeeded = True
                return 0
            try:
                self._report_stats()
            except NodeFencedError:  # told before its heartbeat was
                self._rejoin_fenced()
                continue
            if reply is None or reply.round < self.round or self._in_place():
                continue  # (a reply older than the world its workers started in says nothing)
            changed = reply.round != self.round or reply.num_nodes_waiting > 0
            if changed and any(w.state is WorkerState.RUNNING for w in self.workers):
                log.info("world changed (round %d): restarting workers", reply.round)
                self._restart(self.workers)

    def _leave_excluded(self) -> int:
        """The master keeps this node out of the job's worlds (a straggler, or it failed a
        pre-flight check): once every
        worker is idle (all it trained is committed and reported; at most the rendezvous
        timeout), stop them, tell the master they are gone (their shards go back) and end
        the node with 0: the others train on."""
        c = self.config
        log.warning(
            "node %s: excluded from the job by its master (a straggler or a failed pre-flight "
            "check)",
            c.node_id,
        )
        deadline = time.monotonic() + c.rendezvous_timeout
        while time.monotonic() < deadline:
            running = [w for w in self.workers if w.poll() is WorkerState.RUNNING]
            statuses = [w.status() for w in running]
            if all(st is not None and st.idle for st in statuses):
                break
            time.sleep(c.monitor_interval)
        stop_workers(self.workers)
        for w in self.workers:
            ident = self._identity(w.local_rank)
            self._report_failure(ident.process_id, "excluded by the master", 0, False)
        return 0

    def _never_joined(self) -> bool:
        """True when every running worker uses the trainer helpers and waits for its first
        world (a node restarted as the job ended: there is nothing left for it to train)."""
        running = [w for w in self.workers if w.state is WorkerState.RUNNING]
        statuses = [w.status() for w in running]
        return bool(running) and all(s is not None and s.round < 0 for s in statuses)

    def _kill_hung(self) -> None:
        """SIGKILL a running worker whose progress stalled past the hang timeout; the next
        poll sees it failed and it is restarted like any failed worker. Not while the master
        is unreachable (trainers wait for it), nor until the timeout passed since it is back."""
        now = time.time()
        since = self._beat_since
        if since is not None and now - since > MASTER_SLOW_S:
            return  # the master is unreachable: trainers wait for it
        for w in self.workers:
            if w.state is not WorkerState.RUNNING:
                continue
            idle = stalled_for(w.status(), now, self.config.hang_timeout, self._master_back_at)
            if idle is not None:
                log.warning(
                    "node %s: worker %d (pid %d) made no progress for %.0f s (--hang-timeout "
                    "%g): killing it as hung",
                    self.config.node_id,
                    w.local_rank,
                    w.pid,
                    idle,
                    self.config.hang_timeout,
                )
                w.kill()
                w.poll()

    def _on_failure(self, failed: list[Worker]) -> int | None:
        c = self.config
        code = next((w.exit_code for w in failed if w.exit_code), 1) or 1
        first = min(failed, key=lambda w: w.output.ended_at or time.time())
        tail = first.output.tail()
        signature = (first.exit_code, tail[-1] if tail else "")
        recent = time.monotonic() - self._restarted_at < REPEAT_WINDOW_S
        repeated = bool(tail) and signature == self._last_failure and recent
        self._last_failure = signature
        kills = oom_kills()
        oom_killed = kills is not None and kills > self._oom_kills
        self._oom_kills = kills if kills is not None else self._oom_kills
        # Under the replica's memory limit a restart here would be killed again: end the node
        # as OOMKilled so that the operator relaunches the replica with more memory.
        over_limit = oom_killed and memory_limited()
        errors = {w.local_rank: w.error() for w in failed}
        hopeless = next((w for w in failed if permanent(errors[w.local_rank])), None)
        if hopeless is not None:
            first = hopeless
            tail = first.output.tail()
        restarting = (
            self.restarts < c.max_restarts and not repeated and not over_limit and not hopeless
        )
        if over_limit:
            code = OOM_EXIT_CODE
        elif hopeless is not None:
            code = EXIT_PERMANENT
        for w in failed:
            self._flash.worker_failed(w.local_rank)  # its last copy in memory goes to storage
            ident = self._identity(w.local_rank)
            reason = f"worker {w.local_rank} {failure.describe_exit(w.exit_code)}"
            if oom_killed and w.exit_code in (-signal.SIGKILL, 128 + signal.SIGKILL):
                reason = f"worker {w.local_rank} was OOMKilled (exit code 137)"
            elif errors[w.local_rank]:
                reason += f": {explained(errors[w.local_rank] or '')}"
            elif w.output.tail():
                reason += f": {w.output.tail()[-1]}"
            log.warning("node %s: %s (restarting=%s)", c.node_id, reason, restarting)
            self._report_failure(ident.process_id, reason, code, restarting)
        if over_limit:
            # Not a give-up: the operator relaunches this replica with more memory, and the
            # other nodes wait for it in the next round (no root cause for them to stop on).
            return code
        if not restarting:
            if hopeless is not None:
                why = "a permanent error: no restart can fix it, none was tried"
            elif repeated:
                why = "the same failure twice in a row"
            else:
                why = f"restarts used up ({self.restarts}/{c.max_restarts})"
            failure.publish(
                self.client,
                failure.RootCause(
                    node=c.node_id,
                    local_rank=first.local_rank,
                    rank=first.known_rank(),
                    exit_code=first.exit_code,
                    exited_at=first.output.ended_at or time.time(),
                    why=why,
                    tail=tuple(tail),
                    error=explained(errors.get(first.local_rank) or ""),
                ),
            )
            return code
        self.restarts += 1
        self._restarted_at = time.monotonic()
        observing.restarted(c.job_name, c.node_id)
        in_place = self._in_place()
        self._restart(failed if in_place else self.workers)
        return None

    def _report_failure(self, process_id: str, reason: str, code: int, restarting: bool) -> None:
        """Tell the master that the worker ``process_id`` of this node failed (its shards go
        back to the queue when ``restarting``)."""
        if process_id == self.config.node_id:
            self.client.report_failure(reason, code, restarting)
            return
        with MasterClient(self.config.master, NodeRef(process_id)) as proc_client:
            proc_client.report_failure(reason, code, restarting)

    def _announce_start(self) -> None:
        """A restarted agent (a relaunched pod or process) keeps its node id, and the master
        would wait forever for the shards its previous workers held (its heartbeats never
        stop, so the node never expires): from the second start of a node id on, report the
        previous workers as failed, which returns their shards to the queue."""
        c = self.config
        starts = self.client.kv_add(names.KV_AGENT_STARTS_PREFIX + c.node_id, 1)
        if starts <= 1:
            return
        reason = f"the node's agent restarted (start {starts}): its previous workers are gone"
        log.warning("node %s: %s", c.node_id, reason)
        for local_rank in range(c.nproc_per_node):
            self._report_failure(self._identity(local_rank).process_id, reason, -1, True)

    def _restart(self, which: list[Worker]) -> None:
        stop_workers(which)
        self.group_restarts += 1
        fresh = [self._spawn(w.local_rank) for w in which]
        by_rank = {w.local_rank: w for w in self.workers}
        by_rank.update({w.local_rank: w for w in fresh})
        self.workers = [by_rank[i] for i in sorted(by_rank)]
        self._join_and_start(fresh)

    def _report_stats(self) -> None:
        now = time.monotonic()
        if now - self._last_stats < STATS_INTERVAL_S:
            return
        if any(not w.state.finished and w.proc.poll() is not None for w in self.workers):
            return  # one just exited: the next round handles it; no sample of a gone process
        self._last_stats = now
        s = self._monitor.sample(self.workers)
        if s.memory_bytes == 0:
            return  # every worker exited since the last poll: nothing to measure
        self._step_clock.observe(self.config.job_name, self.config.node_id, s)
        self.client.report_stats(s)
