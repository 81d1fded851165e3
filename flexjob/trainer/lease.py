"""``ShardLeaser``: a training process's shards, leased from the master a few at a time.

The sampler asks for one shard at a time and reports each as soon as its last batch is
committed; the leaser turns that into ``LeaseShards`` calls. A report goes out at once (a
process killed after it keeps nothing unreported), and when the local queue is empty the same
call leases the next ``lease`` shards, so a shard costs one call instead of two
(``get_shard`` + ``report_shard``). A shard the master hands out again while this process still
holds it (a restarted master gives each holder back its shards) is not queued twice.
``report_shards`` sends many reports in one call and leases nothing (a ``DataLoader`` sampler
reports an epoch at its end, or at exit). ``close``
gives the shards it leased but never handed out back to the master. ``lease`` comes from
``FLEXJOB_SHARD_LEASE`` (default 1): more means fewer calls and a longer tail at the end of an
epoch, when one process may still hold shards that others could train.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence

from flexjob.api import names
from flexjob.api.limits import MAX_SHARD_LEASE
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import ShardLease
from flexjob.trainer.sampler import NoShard, ShardSamples


def lease_size(env: dict[str, str] | None = None) -> int:
    """Shards per lease from ``FLEXJOB_SHARD_LEASE`` (default 1); a clear error otherwise."""
    raw = (os.environ if env is None else env).get(names.ENV_SHARD_LEASE, "1")
    try:
        size = int(raw)
    except ValueError:
        size = 0
    if not 1 <= size <= MAX_SHARD_LEASE:
        raise ValueError(
            f"{names.ENV_SHARD_LEASE} must be an integer in 1..{MAX_SHARD_LEASE}, got {raw!r}"
        )
    return size


class ShardLeaser:
    """The sampler's ``get_shard`` / ``report_shard`` over ``client.lease_shards`` (the
    master client of one training process)."""

    def __init__(self, client: MasterClient, lease: int = 1) -> None:
        if not 1 <= lease <= MAX_SHARD_LEASE:
            raise ValueError(f"lease must be in 1..{MAX_SHARD_LEASE}, got {lease}")
        self._client = client
        self.lease = lease
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
        lease = self._client.lease_shards(count, done, dataset)
        self.calls += 1
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
