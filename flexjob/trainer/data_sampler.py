"""``ElasticDistributedSampler``: the elastic sampler as a torch ``Sampler`` for ``DataLoader``.

A drop-in for ``torch.utils.data.DistributedSampler`` in a torchrun-style script started by
``flexjob run``: change the one line that makes the sampler and the job gets dynamic sharding
(the master hands out shards; a process that dies leaves its shards to the others; a node that
joins takes shards at once). Works with ``num_workers > 0`` and ``pin_memory`` (the sampler
runs in the main process; workers only load the indices it yields)::

    sampler = ElasticDistributedSampler(dataset, epochs=3)   # was DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=2, pin_memory=True)
    for epoch in range(3):
        sampler.set_epoch(epoch)  # accepted; the master orders the epochs
        for x, y in loader: ...

Nothing is lost to prefetching: a ``DataLoader`` asks for indices batches ahead of training,
so a shard is reported done only once training has provably consumed it — when the next
epoch's iteration starts (the loop over the previous one ended), or when the process exits
without an unhandled exception (``report_consumed`` does it by hand). A process killed before
that leaves its shards to the master, which hands them out again. One iteration is one epoch:
it ends when the master's next shard belongs to a later epoch, or when it has nothing to hand
out (the data's tail is held by others). Shards are leased adaptively (``trainer.lease``: a few
calls an epoch). Not the trainer's in-place loop (``ElasticSampler`` +
``ElasticTrainer``), which commits per step.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading
import weakref
from collections.abc import Iterator, Sized
from types import TracebackType

from torch.utils.data import Sampler

from flexjob.core.training.dataset import Dataset
from flexjob.trainer.sampler import NoShard, ShardSamples, ShardSource

log = logging.getLogger(__name__)


class ElasticDistributedSampler(Sampler[int]):
    def __init__(
        self,
        dataset: Sized | None = None,
        *,
        size: int | None = None,
        shard_size: int = 64,
        epochs: int = 1,
        shuffle: bool = True,
        seed: int = 0,
        name: str = "",
        source: ShardSource | None = None,
    ) -> None:
        if size is None:
            if dataset is None:
                raise ValueError("give the dataset or size=")
            size = len(dataset)
        if size < 1 or shard_size < 1 or epochs < 1:
            raise ValueError(
                f"size, shard_size and epochs must be >= 1, got {size}, {shard_size}, {epochs}"
            )
        self.size = size
        self.params = Dataset(name, size, (), shard_size, epochs, shuffle, seed)
        self._source = source
        self._registered = False
        self._handed: list[int] = []  # shards whose indices were all yielded, not yet reported
        self._later: ShardSamples | None = None  # the first shard of the next epoch, kept for it
        self._lock = threading.Lock()
        _track(self)

    @property
    def dataset_name(self) -> str:
        return self.params.name

    def set_epoch(self, epoch: int) -> None:
        """Accepted for ``DistributedSampler`` compatibility; the master orders the epochs."""

    def __len__(self) -> int:
        """Samples of one epoch (all ranks together: the master balances them dynamically)."""
        return self.size

    def _bound(self) -> ShardSource:
        if self._source is None:
            from flexjob.trainer.link import MasterLink
            from flexjob.trainer.world import node_identity

            self._source = MasterLink(node_identity(), shard_lease="auto")
        if not self._registered:
            self._source.register_dataset(self.params)
            self._registered = True
        return self._source

    def __iter__(self) -> Iterator[int]:
        self.report_consumed()  # the loop over the previous iteration ended: all trained
        source = self._bound()
        epoch: int | None = None
        while True:
            got = self._later or source.get_shard(self.params.name)
            self._later = None
            if isinstance(got, NoShard):
                return  # END, or the tail is held by others: this epoch is over for us
            if epoch is None:
                epoch = got.epoch
            elif got.epoch != epoch:
                self._later = got
                return
            yield from got.indices
            with self._lock:
                self._handed.append(got.shard_id)

    def report_consumed(self) -> int:
        """Report every shard whose indices were all handed out; how many. Call it only once
        training used them (the sampler does, at the next iteration and at a clean exit)."""
        with self._lock:
            handed, self._handed = self._handed, []
        if handed and self._source is not None:
            accepted = self._source.report_shards(self.params.name, handed)
            for shard_id, ok in zip(handed, accepted, strict=True):
                if not ok:
                    log.warning("master did not accept shard %d as done", shard_id)
        return len(handed)


# ---- reporting the last epoch at a clean exit ----
_live: weakref.WeakSet[ElasticDistributedSampler] = weakref.WeakSet()
_failed = False
_hooked = False


def _track(sampler: ElasticDistributedSampler) -> None:
    global _hooked
    _live.add(sampler)
    if _hooked:
        return
    _hooked = True
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        global _failed
        _failed = True
        previous(kind, value, tb)

    sys.excepthook = hook
    atexit.register(_at_exit)


def _at_exit() -> None:
    if _failed:
        return  # the script died of an exception: what it last held goes back to the master
    for sampler in list(_live):
        try:
            sampler.report_consumed()
        except Exception as exc:  # the master may be gone already; its shards stay DOING
            log.warning("last shards not reported: %s", exc)
