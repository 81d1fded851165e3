"""Shards a dead rank finished in a step that completed: its peers report them for it.

A rank reports a shard once the step that trained the shard's last batch committed. A rank that
dies after that step's gradient all-reduce (its samples are in the update every survivor
applied) but before its report would leave the shard to the master, which hands it out again:
its samples trained twice. So every step's control all-reduce also carries, per rank, the ids
of the shards whose last batch that rank trains in the step (``SLOTS`` at most). Once the step
completed on a survivor, those shards are trained; when the world then breaks before the next
control all-reduce (the one that proves every rank committed), the survivor reports the other
ranks' shards as those ranks (their process ids, gathered when the world formed). A report of a
rank that did report is acknowledged by the master, not counted twice.

The master may already have handed such a shard out again: it took the dead rank's shards back
when it saw the rank go, possibly before the survivors could vouch for them, and a survivor may
now hold the shard (its step that broke, to be retried, may even train it). So a survivor first
drops the shards it holds among those and reports them as its own (the master
counts them: they are DOING for it), and vouches for the rest.

Not covered: a shard whose earlier batches a dead rank trained but whose last batch it never
reached (the master hands the whole shard out again; keep ``shard_size`` a multiple of the batch
for exactly-once), and more than ``SLOTS`` finished shards of one rank in one step.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence

from flexjob.trainer.sampler import Batch

log = logging.getLogger(__name__)

#: Finished shards one rank can vouch for per step (micro-batches may finish several).
SLOTS = 8


class PeerShards:
    """The shards other ranks finished in this rank's last completed step, until proven
    reported (the next control all-reduce) or reported for them (the world broke)."""

    def __init__(self) -> None:
        self._ids: list[str] = []  # process id of each rank of the current world
        self._rank = 0
        self._step: dict[int, list[int]] = {}  # rank → shards it finishes in this step
        self._trained: dict[int, list[int]] = {}  # … in the last step that completed here

    def formed(self, process_ids: Sequence[str], rank: int) -> None:
        """A new world: ``process_ids[r]`` is rank r's (nothing is pending from the old one)."""
        self._ids = list(process_ids)
        self._rank = rank
        self._step = {}
        self._trained = {}

    def encode(self, batches: Sequence[Batch], world_size: int) -> list[int]:
        """This rank's slots of the control tensor (``SLOTS`` per rank, zeros elsewhere): the
        ids + 1 of the shards whose last batch it trains in this step."""
        slots = [0] * (world_size * SLOTS)
        finished = [b.shard_id for b in batches if b.last]
        if len(finished) > SLOTS:
            log.debug("%d shards finish in one step; peers vouch for %d", len(finished), SLOTS)
        base = self._rank * SLOTS
        for k, shard_id in enumerate(finished[:SLOTS]):
            slots[base + k] = shard_id + 1
        return slots

    def control_done(self, slots: Sequence[int]) -> None:
        """The control all-reduce of a step succeeded: every rank committed the step before
        (nothing to vouch for); ``slots`` (summed over ranks) are this step's shards."""
        self._trained = {}
        self._step = {}
        for r in range(len(slots) // SLOTS):
            if r == self._rank:
                continue
            ids = [v - 1 for v in slots[r * SLOTS : (r + 1) * SLOTS] if v > 0]
            if ids:
                self._step[r] = ids

    def step_done(self) -> None:
        """The step's body completed here (its gradient all-reduce included every rank)."""
        self._trained, self._step = self._step, {}

    def report(
        self,
        report_as: Callable[[str, int], bool],
        drop_held: Callable[[set[int]], Collection[int]] = lambda _ids: (),
    ) -> int:
        """The world broke: report, as their ranks, the shards the other ranks finished in the
        last step that completed here; returns how many the master accepted. First
        ``drop_held`` (``ElasticSampler.drop_shards``) takes those this rank holds itself (the
        master handed them out again) off its hands and reports them as its own."""
        trained, self._trained, self._step = self._trained, {}, {}
        skip = set(drop_held({s for ids in trained.values() for s in ids}))
        if skip:
            log.warning("shards %s, handed out here again, were trained by a peer", sorted(skip))
        accepted = 0
        for r, shard_ids in trained.items():
            if r >= len(self._ids):
                continue
            for shard_id in shard_ids:
                if shard_id in skip:
                    continue
                try:
                    ok = report_as(self._ids[r], shard_id)
                except Exception as exc:  # the master may be away: it hands the shard out again
                    log.warning("could not report shard %d for rank %d: %s", shard_id, r, exc)
                    continue
                accepted += ok
                log.warning(
                    "the world broke after a step rank %d (%s) finished shard %d in: reported it "
                    "for that rank (accepted: %s)",
                    r,
                    self._ids[r],
                    shard_id,
                    ok,
                )
        return accepted
