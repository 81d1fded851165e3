"""The elastic training loop: steps over master shards that survive world changes in place.

``ElasticTrainer`` forms the world of the current generation, wraps the model in DDP, and
yields one ``Step`` at a time. Every step starts with a tiny control all-reduce (samples in
hand, data left, "re-form now": ``trainer.step_control``) so all ranks agree on when to stop
and when to take in nodes that wait; rank 0 saves through ``trainer.state_saver``. When a
collective fails because a peer died, ``trainer.step()`` swallows the error, the trainer joins
the next generation, re-forms the process group in the same process, copies state from the
most advanced rank and retries the same batch. Not for restarting processes
(the agent does that) nor for choosing ranks (the master does).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Unpack

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from flexjob.api import names
from flexjob.core.training.batch import RankBatch
from flexjob.trainer import breaker, device, group, preflight, world
from flexjob.trainer.batch import MicroSteps, Step, fetch_plan, micro_batches_of
from flexjob.trainer.peer_shards import PeerShards
from flexjob.trainer.rank_sync import sync_state
from flexjob.trainer.rendezvous import (
    DataFinished,
    WaitingWatcher,
    WorldSource,
    next_generation,
)
from flexjob.trainer.sampler import Batch, ElasticSampler, NoShard, ShardSource
from flexjob.trainer.settings import TrainerSettings
from flexjob.trainer.state_saver import StateSaver
from flexjob.trainer.status import StatusFlags, StatusWriter
from flexjob.trainer.step_control import all_reduce_control
from flexjob.trainer.step_time import OwnStepTimer

if TYPE_CHECKING:
    from flexjob.trainer.batch_adapter import BatchAdapter

log = logging.getLogger(__name__)

PUBLISH_EVERY_S = 0.5
#: Steps between two checkpoints of rank 0 (and one at the end).
DEFAULT_CHECKPOINT_EVERY = 50
#: The exit code of a process whose broken world cannot re-form in place: its agent
#: restarts it as a failed worker.
EXIT_NOT_IN_PLACE = 75


class ElasticTrainer:
    """Runs steps over master shards with DDP, surviving deaths and joins in place.

    The model runs on this rank's device (``device``: ``cuda:<local rank>`` where CUDA sees
    devices, else the CPU; ``trainer.device``) and its collectives on that device's backend
    (``backend``: nccl or gloo, ``FLEXJOB_BACKEND`` overrides); a step's body moves its
    batch to ``device``. What the agent and the user set in the environment (the checkpoint
    directory, timeouts, the backend, ...) comes from ``settings`` (``trainer.settings``; None:
    this process's environment)."""

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        sampler: ElasticSampler,
        *,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
        checkpoint: bool = True,
        flash: bool | None = None,
        flash_every: int = 1,
        link: Any = None,
        timeout_s: float = 60.0,
        collective_timeout_s: float | None = None,
        poll_waiting_s: float = 0.2,
        settings: TrainerSettings | None = None,
    ) -> None:
        #: What the environment says (``trainer.settings``; None: this process's, when read).
        self._settings = settings
        self.ident = world.node_identity(settings)
        #: This rank's device and its collectives' backend (``trainer.device``).
        self.device = device.rank_device(self.ident.local_rank)
        self.backend = device.backend_of(self.device, settings)
        self.module = model.to(self.device)
        self.optimizer = optimizer
        self.sampler = sampler
        directory = world.default_checkpoint_dir(checkpoint_dir, settings) if checkpoint else None
        #: Rank 0's checkpoints and flash copies, and the state a start resumes from.
        self.saver = StateSaver(
            model, optimizer, sampler, directory, self.ident,
            checkpoint_every=checkpoint_every, flash=flash, flash_every=flash_every,
        )  # fmt: skip
        #: Where ``start()`` found the state it resumed from: ``"memory"``/``"storage"`` (a
        #: flash copy), ``"checkpoint"`` (the checkpoint file), or None (a fresh start).
        self.resumed_from: str | None = None
        self.timeout_s = timeout_s
        self.collective_timeout_s = world.collective_timeout(
            collective_timeout_s, timeout_s, settings
        )
        self.step_count = 0
        self.reforms = 0
        self._restarts_at_start = world.restart_count(settings)
        self._link = link
        self._poll_waiting_s = poll_waiting_s
        self._gen: world.Generation | None = None
        self._ddp: torch.nn.Module | None = None
        self._broken = False
        #: Nodes wait to join: re-form once the step whose batches are cut has run.
        self._join_after_step = False
        self._stores = group.StoreCache(timeout_s)
        self._preflight = preflight.enabled(settings)
        self._watcher: WaitingWatcher | None = None
        self._status = StatusWriter(settings=settings)
        #: This rank's own seconds per step, waits for peers left out (``trainer.step_time``).
        self.step_timer = OwnStepTimer()
        self._peers = PeerShards()
        self._on_reform: list[Callable[[world.WorldInfo], None]] = []
        self._on_step: list[Callable[[Step], None]] = []
        self._published = 0.0
        self._loss_published = 0.0
        #: This rank's share of the job's fixed global batch in the current world (None: the
        #: job has no ``spec.batch``; one sampler batch per step).
        self.batch_plan: RankBatch | None = None
        #: With ``spec.batch.adaptive``: re-plans the global batch (``trainer.batch_adapter``).
        self._adapter: BatchAdapter | None = None

    # ---- lifecycle ----
    def __enter__(self) -> ElasticTrainer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def source(self) -> WorldSource:
        if self._link is None:
            from flexjob.trainer.link import MasterLink  # grpc only when a master is used

            self._link = MasterLink.from_identity(self.ident)
        link: WorldSource = self._link
        return link

    def start(self) -> None:
        """Load the last checkpoint, then form the world and copy state from the survivors."""
        shards: ShardSource = self.source  # type: ignore[assignment]
        self.sampler.bind(shards)
        state = self.saver.restore()
        if state is not None:
            self.resumed_from = str(state["source"])
            self.step_count = int(state.get("step", 0))
            self.sampler.load_state_dict(state.get("sampler", {}))
        self._watcher = WaitingWatcher(self.source, self._poll_waiting_s)
        gen = world.generation_from_env(self._settings)
        if gen is not None:
            # The agent's world may have moved on while this script was starting.
            gen = self.source.get_world(gen.round)
        if gen is None:
            gen = next_generation(self.source, -1, self.timeout_s, on_wait=self._beat)
        self._form(gen)

    def close(self) -> None:
        """Leave the world and close the master connection (before interpreter exit: gRPC
        channels left open at exit can abort the process)."""
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        if self._link is not None and dist.is_initialized() and dist.get_rank() == 0:
            self._publish(names.KV_STEP, str(self.step_count))  # the last: progress shows it
        group.destroy_group()
        self.saver.close()
        size = self._gen.world_size(self.ident.local_world_size) if self._gen else 0
        self._write_status(size, closed=True, force=True)  # no hang while the process exits
        close = getattr(self._link, "close", None)
        if close is not None:
            close()
        world.set_current(None)

    # ---- what the user reads ----
    @property
    def model(self) -> torch.nn.Module:
        """The DDP-wrapped model of the current world (rebuilt after each re-form)."""
        assert self._ddp is not None, "call start() first"
        return self._ddp

    @property
    def info(self) -> world.WorldInfo:
        return world.world_info()

    def on_reform(self, callback: Callable[[world.WorldInfo], None]) -> None:
        """Call ``callback(world_info)`` after each re-formed world (e.g. to re-plan batches)."""
        self._on_reform.append(callback)

    def on_step(self, callback: Callable[[Step], None]) -> None:
        """Call ``callback(step)`` after each committed step (e.g. ``trainer.goodput``)."""
        self._on_step.append(callback)

    def publish(self, key: str, value: str) -> None:
        """Set ``key`` in the master's KV store (best effort: never breaks training)."""
        self._publish(key, value)

    # ---- the loop ----
    def steps(self) -> Iterator[Step]:
        """Yield steps until every epoch is done; wrap each step's body in ``trainer.step()``."""
        while True:
            if self._broken or self._join_after_step:
                self._join_after_step = False
                try:
                    self._reform()
                except DataFinished as done:  # the others finished while this node was out
                    log.warning("%s: this node's part of the job is over", done)
                    return
                continue
            count = micro_batches_of(self.batch_plan)
            got = self.sampler.next_batches(count)
            ctl = self._control(got)
            if ctl is None:
                continue
            total, more, reform = ctl
            if reform and total == 0:
                self._reform()
                continue
            # Nodes waiting to join re-form the world after this step: the batches already
            # cut run as planned, so the new world starts from the next global batch in order
            # (re-forming now would split them over the new plan and reorder the samples).
            self._join_after_step = reform
            if total == 0:
                if not more:
                    break
                self._beat()
                time.sleep(0.02)
                continue
            batches = got if isinstance(got, list) else []
            micro = tuple(list(b.indices) for b in batches)
            indices = [i for m in micro for i in m]
            epoch = batches[0].epoch if batches else self.sampler.epoch
            self.optimizer.zero_grad(set_to_none=False)
            size = dist.get_world_size()
            planned = micro if self.batch_plan is not None else ()
            step = Step(self.step_count, indices, epoch, total, size, planned)
            yield step
            self.step_timer.body_ended()
            if self._broken:
                continue  # the same batches are retried in the next world
            self._peers.step_done()
            self.saver.commit(batches, self.step_count + 1, dist.get_rank())
            self.step_count += 1
            for callback in self._on_step:
                callback(step)
            self._after_step()
        self.saver.finish(self.step_count, dist.get_rank())
        self._write_status(dist.get_world_size(), force=True)

    @contextlib.contextmanager
    def step(self) -> Iterator[None]:
        """Run one step's body; a failed collective is swallowed and the world re-formed."""
        try:
            yield
        except Exception as exc:
            if not group.is_collective_error(exc):
                raise
            self._world_broke()
            log.info("collective failed in round %s: %s", self.round, str(exc)[:200])

    def fit(self, train_step: Callable[[Step], Any]) -> int:
        """Run ``train_step(step)`` for every micro-batch of every step (gradients of all but
        the last are kept local: one all-reduce per step); returns the steps committed."""
        for s in self.steps():
            with self.step():
                for micro in self.micro_steps(s):
                    train_step(micro)
        return self.step_count

    def micro_steps(self, step: Step) -> Iterator[Step]:
        """``step`` as its micro-batches, all but the last under DDP ``no_sync`` (gradients
        accumulate; the last backward all-reduces them). A step without a plan is itself."""
        return MicroSteps(step, self.model).steps()

    def report_loss(self, loss: float) -> None:
        """Rank 0's loss for the job's timeline and ``flexjob describe`` (sent at most every
        ``PUBLISH_EVERY_S``; other ranks' calls are ignored)."""
        now = time.monotonic()
        if dist.get_rank() == 0 and now - self._loss_published >= PUBLISH_EVERY_S:
            self._loss_published = now
            self._publish(names.KV_LOSS, repr(float(loss)))

    @property
    def round(self) -> int:
        return self._gen.round if self._gen is not None else -1

    # ---- internals ----
    def _control(self, got: list[Batch] | NoShard) -> tuple[int, bool, bool] | None:
        """The step's control all-reduce (``trainer.step_control``); None when it failed."""
        wants = self._watcher is not None and self._watcher.waiting > 0
        # Rank 0's adaptive-batch proposal rides here: every rank applies it from the next step.
        proposal = self._adapter.proposal(dist.get_rank()) if self._adapter else (0, 0)
        try:
            ctl = all_reduce_control(got, wants, proposal, self._peers, self.step_timer)
        except Exception as exc:
            if not group.is_collective_error(exc):
                raise
            self._world_broke()
            log.info("control all-reduce failed in round %s: %s", self.round, exc)
            return None
        if ctl.batch and self._adapter is not None:
            rank, size = dist.get_rank(), dist.get_world_size()
            self.batch_plan = self._adapter.apply(ctl.batch, ctl.gain, rank, size)
        return ctl.total, ctl.more, ctl.reform

    def _after_step(self) -> None:
        now = time.monotonic()
        if dist.get_rank() == 0 and now - self._published >= PUBLISH_EVERY_S:
            self._published = now
            self._publish(names.KV_STEP, str(self.step_count))
        self._write_status(dist.get_world_size(), step_seconds=self.step_timer.seconds)
        self.saver.after_step(self.step_count, dist.get_rank())

    def _beat(self) -> None:
        """Alive but not stepping (waiting for a world or for data): tell the agent, whose
        hang detection watches this file; ``idle``: every step it ran is committed."""
        size = self._gen.world_size(self.ident.local_world_size) if self._gen else 0
        self._write_status(size, step_seconds=self.step_timer.seconds, idle=True)

    def _write_status(
        self,
        world_size: int,
        *,
        force: bool = False,
        **shown: Unpack[StatusFlags],
    ) -> None:
        """Where training stands, for the agent (``trainer.status``)."""
        self._status.write(
            round=self.round,
            step=self.step_count,
            samples=self.sampler.samples_committed,
            epoch=self.sampler.epoch,
            world_size=world_size,
            force=force,
            **shown,
        )

    def _publish(self, key: str, value: str) -> None:
        publish = getattr(self.source, "publish", None)
        if publish is not None:
            with contextlib.suppress(Exception):
                publish(key, value)

    def _world_broke(self) -> None:
        """A collective of this world failed: wake the peers still blocked in one with this
        rank (``group.abort_group``) so that all of them re-join now. Where this backend's
        world cannot be re-formed in place (``breaker.in_place_problem``) the process ends
        instead, and its agent restarts it (the restart path)."""
        self._broken = True
        group.abort_group()
        problem = breaker.in_place_problem(self.backend)
        if problem is not None:
            log.warning("world of round %s broke; restarting the process: %s", self.round, problem)
            raise SystemExit(EXIT_NOT_IN_PLACE)

    def _reform(self) -> None:
        """Leave the current world and form the next one, in this process. The peer shards
        go to the master before the join (the next world must not hand them out again); the
        old group is torn down after it (the master waits for every survivor's join)."""
        started = time.monotonic()
        if self._broken:  # a planned re-form: every rank committed and reported its shards
            self._report_peer_shards()
        self._ddp = None
        after = self.round
        gen = next_generation(
            self.source,
            after,
            self.timeout_s,
            on_wait=self._beat,
            on_joined=group.destroy_group,
            finished=self._data_finished,
        )
        self._form(gen)
        self.reforms += 1
        log.info("re-formed round %d -> %d in %.3f s", after, gen.round, time.monotonic() - started)

    def _data_finished(self) -> bool:
        probe = getattr(self.source, "data_finished", None)
        return bool(probe(self.sampler.dataset)) if probe is not None else False

    def _drop_failed(self, round_: int) -> bool:
        """Run the pre-flight check (``trainer.preflight``); True when nodes failed it and the
        master keeps them out: every rank then re-forms (one that failed waits outside until
        its agent stops it)."""
        failed = preflight.preflight(self.ident.node_id)
        if not failed:
            return False
        exclude = getattr(self.source, "exclude_nodes", None)
        out = tuple(exclude(round_, failed)) if exclude is not None else ()
        log.warning("pre-flight check of round %d: %s; kept out: %s", round_, failed, out)
        return bool(out)

    def _report_peer_shards(self) -> None:
        """The world broke: report the shards peers finished in the last step that completed
        here, for them (``trainer.peer_shards``: a rank that died before its report)."""
        report_as = getattr(self.source, "report_shard_as", None)
        if report_as is None:
            self._peers.report(lambda _process, _shard: False)
            return
        dataset = self.sampler.dataset
        self._peers.report(
            lambda process, shard: bool(report_as(process, dataset, shard)),
            self.sampler.drop_shards,
        )

    def _adapt(self, nodes: int, size: int) -> None:
        if self.batch_plan is not None and self.batch_plan.adaptive and self._ddp is not None:
            from flexjob.trainer.batch_adapter import BatchAdapter  # numpy: only when adaptive

            self._adapter = self._adapter or BatchAdapter.start(
                self, self.optimizer, self.batch_plan
            )
            self._adapter.formed(nodes, size, self._ddp, self.batch_plan)

    def _form(self, gen: world.Generation) -> None:
        while True:
            rank = gen.rank(self.ident.local_rank, self.ident.local_world_size)
            size = gen.world_size(self.ident.local_world_size)
            if rank == 0:
                # Agents start later workers without a world (they join by themselves).
                self._publish(names.KV_IN_PLACE, "1")
            try:
                group.form_group(
                    gen, rank, size, self._stores, self.collective_timeout_s, self.backend
                )
                if self._preflight and size > 1 and self._drop_failed(gen.round):
                    group.destroy_group()
                    gen = next_generation(
                        self.source, gen.round, self.timeout_s, on_wait=self._beat
                    )
                    continue
                self.step_count, _ = sync_state(self.module, self.optimizer, self.step_count)
                process_ids: list[Any] | None = gen.process_ids(self.ident.local_world_size)
                if process_ids is None:  # a source that does not name the members
                    process_ids = [None] * size
                    dist.all_gather_object(process_ids, self.ident.process_id)
                # sync_state broadcast the state: DDP need not broadcast it again.
                ids = [self.device] if self.device.type == "cuda" else None
                self._ddp = DistributedDataParallel(self.module, device_ids=ids, init_sync=False)
                self.batch_plan = fetch_plan(self.source, rank, size, self.sampler.batch_size)
                break
            except Exception as exc:
                if not group.is_collective_error(exc):
                    raise
                log.warning("forming round %d failed (%s); joining the next", gen.round, exc)
                group.abort_group()
                group.destroy_group()
                gen = next_generation(self.source, gen.round, self.timeout_s, on_wait=self._beat)
        self._gen = gen
        self._broken = False
        self.step_timer.attach(self.module)
        self.step_timer.reset()
        self._peers.formed([str(p) for p in process_ids], rank)
        # TORCHELASTIC_RESTART_COUNT rises with every in-place re-form, as with a restart.
        env = world.world_env(gen, self.ident, self._restarts_at_start + self.reforms)
        os.environ.update(env)
        info = world.world_info_of(gen, self.ident)
        world.set_current(info)
        self._adapt(info.num_nodes, size)
        self._write_status(size, force=True)  # self.round is gen.round from here
        if self._watcher is not None:
            self._watcher.clear()
            self._watcher.set_active(rank == 0)
        for callback in self._on_reform:
            callback(info)
