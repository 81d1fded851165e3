"""The elastic sampler: micro-batches of sample indices taken from the master's shards.

A shard is reported done only after every batch cut from it has been committed (the step that
used it finished on every rank), so a process that dies mid-shard leaves the shard to the
master, which hands it out again. Not a torch ``Sampler`` over a fixed range: the indices come
from the network and the set of workers may change between two batches.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from flexjob.core.training.dataset import Dataset

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ShardSamples:
    """A piece of one epoch: explicit sample indices."""

    shard_id: int
    epoch: int
    indices: Sequence[int]


class NoShard(enum.Enum):
    """Why ``ShardSource.get_shard`` returned no shard."""

    WAIT = "wait"  # nothing to hand out now; others still hold shards of this epoch
    END = "end"  # every epoch is done


class ShardSource(Protocol):
    """Where shards come from (the master over gRPC; a list in tests)."""

    def register_dataset(self, dataset: Dataset) -> None: ...

    def get_shard(self, dataset: str) -> ShardSamples | NoShard: ...

    def report_shard(self, dataset: str, shard_id: int) -> bool: ...

    def report_shards(self, dataset: str, shard_ids: Sequence[int]) -> list[bool]:
        """Report several shards (in order; one call to the master where it can)."""
        ...


@dataclass(frozen=True, slots=True)
class Batch:
    """A micro-batch: indices from one shard, not yet committed."""

    indices: Sequence[int]
    epoch: int
    shard_id: int
    end: int  # offset in the shard just past this batch
    last: bool = False  # the shard's last batch: committing it finishes the shard


class ElasticSampler:
    """Hands out micro-batches of at most ``batch_size`` indices from master shards.

    ``next_batch`` returns the same batch until ``commit`` is called for it, so a step that
    failed because the world changed is retried with the same samples.
    """

    def __init__(
        self,
        source: ShardSource | None = None,
        *,
        batch_size: int,
        dataset: str = "",
        size: int | None = None,
        shard_size: int | None = None,
        epochs: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.dataset = dataset
        self.batch_size = batch_size
        self._source = source
        self._params = (
            Dataset(dataset, size, (), shard_size or batch_size, epochs or 1, shuffle, seed)
            if size is not None
            else None
        )
        self._shard: ShardSamples | None = None
        self._offset = 0
        self._pending: list[Batch] = []
        self._ended = False
        self.epoch = 0
        self.samples_committed = 0
        self.shards_reported = 0

    def bind(self, source: ShardSource) -> None:
        """Attach the shard source (the elastic trainer does this with its master link)."""
        self._source = source
        if self._params is not None:
            source.register_dataset(self._params)

    @property
    def ended(self) -> bool:
        return self._ended and not self._pending

    def next_batch(self) -> Batch | NoShard:
        """The oldest pending batch, a new one, or why there is none."""
        got = self.next_batches(1)
        return got[0] if isinstance(got, list) else got

    def next_batches(self, count: int) -> list[Batch] | NoShard:
        """The ``count`` oldest pending batches, cutting new ones as needed (fewer at the end of
        the data or while shards are held by others; ``[]`` for ``count`` 0), or why there is
        none. The same batches come back until they are committed, so a step that failed is
        retried with the same samples."""
        while len(self._pending) < count:
            got = self._cut()
            if isinstance(got, NoShard):
                if not self._pending:
                    return got
                break
            self._pending.append(got)
        return self._pending[:count]

    def _cut(self) -> Batch | NoShard:
        if self._source is None:
            raise RuntimeError("ElasticSampler has no shard source: call bind() first")
        if self._ended:
            return NoShard.END
        if self._shard is None or self._offset >= len(self._shard.indices):
            got = self._source.get_shard(self.dataset)
            if isinstance(got, NoShard):
                self._ended = got is NoShard.END
                return got
            self._shard, self._offset = got, 0
            self.epoch = got.epoch
            if not got.indices:  # an empty shard is done at once
                self._report(got)
                self._shard = None
                return self._cut()
        shard = self._shard
        end = min(self._offset + self.batch_size, len(shard.indices))
        batch = Batch(
            shard.indices[self._offset : end],
            shard.epoch,
            shard.shard_id,
            end,
            last=end >= len(shard.indices),
        )
        self._offset = end
        return batch

    def commit(self, batch: Batch) -> None:
        """The step that used ``batch`` (the oldest pending one) finished: report its shard when
        it was the shard's last batch."""
        if not self._pending or batch is not self._pending[0]:
            raise RuntimeError("commit() of a batch that is not the oldest pending one")
        self._pending.pop(0)
        self.samples_committed += len(batch.indices)
        if batch.last:
            self._report_id(batch.shard_id)

    def drop_shards(self, shard_ids: Collection[int]) -> list[int]:
        """Stop training the shards of ``shard_ids`` this process holds and report them done:
        another process trained them (``trainer.peer_shards``) after the master had handed them
        out again to this one. Their pending batches, the shard being cut and those the source
        still queues here are dropped; returns their ids."""
        dropped = {b.shard_id for b in self._pending if b.shard_id in shard_ids}
        self._pending = [b for b in self._pending if b.shard_id not in shard_ids]
        if self._shard is not None and self._shard.shard_id in shard_ids:
            dropped.add(self._shard.shard_id)
            self._shard = None
        unqueue = getattr(self._source, "unqueue", None)  # a source that leases ahead
        if unqueue is not None:
            dropped.update(unqueue(self.dataset, shard_ids))
        ids = sorted(dropped)
        if ids:
            assert self._source is not None
            self._source.report_shards(self.dataset, ids)
        return ids

    def _report(self, shard: ShardSamples) -> None:
        self._report_id(shard.shard_id)

    def _report_id(self, shard_id: int) -> None:
        assert self._source is not None
        if not self._source.report_shard(self.dataset, shard_id):
            log.warning("master did not accept shard %d as done", shard_id)
        self.shards_reported += 1

    def __iter__(self) -> Iterator[Batch]:
        """Plain (non-elastic) iteration: each batch is committed when the next is asked for."""
        for batch in self.batches():
            yield batch
            self.commit(batch)

    def batches(self) -> Iterator[Batch]:
        """Each next batch until the data ends, waiting while others hold the shards left; the
        caller commits each (``commit``) before it asks for the next, or gets it again."""
        while True:
            got = self.next_batch()
            if got is NoShard.END:
                return
            if isinstance(got, NoShard):
                time.sleep(0.05)
                continue
            yield got

    def state_dict(self) -> dict[str, Any]:
        """Counters for a checkpoint (the master keeps the shard bookkeeping itself)."""
        return {"epoch": self.epoch, "samples_committed": self.samples_committed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch = int(state.get("epoch", 0))
        self.samples_committed = int(state.get("samples_committed", 0))
