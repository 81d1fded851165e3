"""``ShardLeaser``: a training process's shards, leased from the master a few at a time.

The sampler asks for one shard at a time and reports each as soon as its last batch is
committed; the leaser turns that into ``LeaseShards`` calls. A report goes out at once (a
process killed after it keeps nothing unreported), and when the local queue is empty the same
call leases the next shards, so a shard costs one call instead of two
(``get_shard`` + ``report_shard``), sent over the client's shard stream
(``rpc.shard_stream``). A shard the master hands out again while this process still
holds it (a restarted master gives each holder back its shards) is not queued twice.
``report_shards`` sends many reports in one call and leases nothing (a ``DataLoader`` sampler
reports an epoch at its end, or at exit). ``close``
gives the shards it leased but never handed out back to the master.

How many shards a call leases follows ``core.training.lease_size.LeasePolicy``, from
``FLEXJOB_SHARD_LEASE``: ``auto`` starts at one shard and doubles while leases are used up
quickly (up to 32 shards, about a second of training held ahead); a number fixes it (more means
fewer calls and a longer tail at the end of the data, when one process may still hold shards
that others could train). Unset, it is ``auto`` for a ``DataLoader`` sampler (its reports go in
one call an epoch, so leases are most of its calls) and 1 for ``ElasticSampler`` (each report
is a call that leases the next shard anyway: a bigger lease saves it no call). A process that
dies gives back every shard it leased and had not finished (the master puts what is DOING for
it back in TODO).

Reports are not held back to ride on a later lease call: a shard counts as done only once the
master recorded it, and ``trainer.peer_shards`` relies on a committed rank having reported (the
next control all-reduce proves it), so a rank that died with reports held back would have its
trained shards handed out again. A ``DataLoader`` sampler's reports already go in one call an
epoch. Nor is the next lease fetched in the background: with a grown lease a call comes about
once a second, the trainer's refill rides on its report (synchronous anyway), and a
``DataLoader``'s prefetch hides the round trip (``benchmarks/data_loading.py``).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Collection, Sequence

from flexjob.api import names
from flexjob.api.limits import MAX_SHARD_LEASE
from flexjob.core.training.lease_size import LeasePolicy
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import ShardLease
from flexjob.trainer.sampler import NoShard, ShardSamples
from flexjob.trainer.settings import TrainerSettings, current_or


def lease_size(settings: TrainerSettings | None = None, default: str = "auto") -> LeasePolicy:
    """The lease policy from ``FLEXJOB_SHARD_LEASE`` (``default`` when unset): ``auto``
    (adaptive) or a fixed number of shards per call; a clear error otherwise."""
    given = current_or(settings).shard_lease
    raw = (default if given is None else given).strip()
    if raw.lower() in ("", "auto"):
        return LeasePolicy()
    try:
        size = int(raw)
    except ValueError:
        size = 0
    if not 1 <= size <= MAX_SHARD_LEASE:
        raise ValueError(
            f"{names.ENV_SHARD_LEASE} must be 'auto' or an integer in 1..{MAX_SHARD_LEASE}, "
            f"got {raw!r}"
        )
    return LeasePolicy(fixed=size)


class ShardLeaser:
    """The sampler's ``get_shard`` / ``report_shard`` over ``client.lease_shards`` (the
    master client of one training process)."""

    def __init__(
        self,
        client: MasterClient,
        lease: int | LeasePolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``lease``: a fixed number of shards per call, or a policy (default: adaptive)."""
        if lease is None:
            lease = LeasePolicy()
        elif isinstance(lease, int):
            lease = LeasePolicy(fixed=lease)  # checks the range
        self._client = client
        self.policy = lease
        self.lease = lease.first  # shards the next call asks for
        self._clock = clock
        # the last lease per dataset: when it came, the shards it brought, the shards asked
        self._leased_at: dict[str, tuple[float, int, int]] = {}
        self._queued: dict[str, deque[ShardSamples]] = {}
        self._held: dict[str, set[int]] = {}  # leased and not reported (queued or training)
        self._ended: set[str] = set()
        self.calls = 0

    def get_shard(self, dataset: str) -> ShardSamples | NoShard:
        queue = self._queue(dataset)
        while not queue and dataset not in self._ended:
            if not self._call(dataset, self.lease).shards:
                break  # none free now (a lease of only shards held here is asked again)
        if queue:
            return queue.popleft()
        return NoShard.END if dataset in self._ended else NoShard.WAIT

    def holding(self, dataset: str) -> list[int]:
        """The shards of ``dataset`` leased here and not reported (queued or training)."""
        return sorted(self._held.get(dataset, ()))

    def unqueue(self, dataset: str, shard_ids: Collection[int]) -> list[int]:
        """Take the shards of ``shard_ids`` out of the queue (not handed out yet; still held
        here, so still to be reported); returns their ids."""
        queue = self._queue(dataset)
        taken = [s.shard_id for s in queue if s.shard_id in shard_ids]
        if taken:
            self._queued[dataset] = deque(s for s in queue if s.shard_id not in shard_ids)
        return taken

    def report_shard(self, dataset: str, shard_id: int) -> bool:
        """Report at once; lease the next shards in the same call when none is queued."""
        refill = 0 if self._queue(dataset) or dataset in self._ended else self.lease
        return self._report(dataset, (shard_id,), refill)[0]

    def report_shards(self, dataset: str, shard_ids: Sequence[int]) -> list[bool]:
        """Report ``shard_ids`` in order, up to ``MAX_SHARD_LEASE`` per call, leasing nothing
        (what a ``DataLoader`` sampler reports at an epoch's end or at exit: a process about
        to exit must not take shards with it)."""
        accepted: list[bool] = []
        for start in range(0, len(shard_ids), MAX_SHARD_LEASE):
            accepted += self._report(dataset, shard_ids[start : start + MAX_SHARD_LEASE], 0)
        return accepted

    def _report(self, dataset: str, shard_ids: Sequence[int], refill: int) -> list[bool]:
        lease = self._call(dataset, refill, done=shard_ids)
        self._held[dataset].difference_update(shard_ids)
        return list(lease.accepted)

    def close(self) -> None:
        """Give back the shards leased and never handed out (best effort: a master that
        cannot be reached takes them back when this process is declared gone)."""
        for dataset, queue in self._queued.items():
            if queue:
                ids = [s.shard_id for s in queue]
                queue.clear()
                self._held[dataset].difference_update(ids)
                self._client.lease_shards(0, (), dataset, release=ids)

    def _queue(self, dataset: str) -> deque[ShardSamples]:
        if dataset not in self._queued:
            self._queued[dataset], self._held[dataset] = deque(), set()
        return self._queued[dataset]

    def _call(self, dataset: str, count: int, done: Sequence[int] = ()) -> ShardLease:
        if count:
            self._adapt(dataset)
            count = self.lease
        lease = self._client.lease_shards(count, done, dataset)
        self.calls += 1
        if lease.shards:
            self._leased_at[dataset] = (self._clock(), len(lease.shards), count)
        queue, held = self._queue(dataset), self._held[dataset]
        for s in lease.shards:
            if s.shard_id in held:
                continue  # a restarted master handed back a shard this process still holds
            held.add(s.shard_id)
            indices = s.indices if s.indices else range(s.start, s.end)
            queue.append(ShardSamples(s.shard_id, s.epoch, indices))
        if lease.end_of_data:
            self._ended.add(dataset)
        return lease

    def _adapt(self, dataset: str) -> None:
        """The queue ran dry: size the next lease by how fast the last one was used up (as if
        it had brought every shard it asked for: one cut short by the data's tail counts in
        full)."""
        last = self._leased_at.pop(dataset, None)
        if last is not None:
            at, got, asked = last
            used_up_s = (self._clock() - at) * asked / got
            self.lease = self.policy.next(asked, used_up_s)
