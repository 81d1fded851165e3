"""What the server read from the platform, kept a short while so that requests are answered
from memory: ``ReadCache``.

For: the reads behind every route (jobs, one job, a job's replicas and services, the
cluster's AggregatorConfigs), like DI Orchestrator's di-server, which answers from its
informers' caches instead of asking the API server per request. Each read is kept ``ttl``
seconds (``DEFAULT_TTL``); every write the server makes itself (a status patch, a replica
deleted) drops everything at once (``invalidate``), so a read after the server's own write is
the platform's state after it, never before. A read that began before a write and ends after it
is answered but not kept (the cache's epoch moved on meanwhile). Concurrent reads of one key
wait for one platform call (single flight). What others write (the operator creating replicas)
is seen within ``ttl`` seconds; a read that must see it at once (a POST waiting for its
replicas' addresses) asks for ``fresh`` and refreshes the entry. A failed read (a job not
found) keeps nothing, and at most ``MAX_KEYS`` keys are kept (past it, stale ones go first).
``ttl`` 0: no cache.

Every read is counted in the server's metrics by operation and by where it was answered from
(``flexjob_server_platform_reads{op, source="platform"|"cache"}``). Not for writes, nor for the
operator's cache (``operator.watch_cache``).
"""

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from prometheus_client import Counter

T = TypeVar("T")

#: Seconds a read is kept (``flexjob server --cache-ttl``).
DEFAULT_TTL = 1.0
#: Keys kept at most: past it, a new key first drops every entry older than the ttl.
MAX_KEYS = 4096


@dataclass
class _Kept:
    """One key: its value and when it was loaded, and the lock its single flight holds."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    value: Any = None
    loaded_at: float | None = None
    epoch: int = -1


class ReadCache:
    """Platform reads by key, kept ``ttl`` seconds and dropped on the server's own writes."""

    def __init__(
        self,
        ttl: float = DEFAULT_TTL,
        reads: "Counter | None" = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl < 0:
            raise ValueError(f"cache ttl must be >= 0 seconds, got {ttl}")
        self.ttl = ttl
        self._reads = reads
        self._clock = clock
        self._lock = threading.Lock()
        self._slots: dict[Hashable, _Kept] = {}
        self._epoch = 0

    def _count(self, op: str, source: str) -> None:
        if self._reads is not None:
            self._reads.labels(op, source).inc()

    def _slot(self, key: Hashable) -> _Kept:
        with self._lock:
            if key not in self._slots and len(self._slots) >= MAX_KEYS:
                now = self._clock()
                self._slots = {
                    k: s
                    for k, s in self._slots.items()
                    if s.loaded_at is not None and now - s.loaded_at < self.ttl
                }
            return self._slots.setdefault(key, _Kept())

    def _drop(self, key: Hashable, slot: _Kept) -> None:
        """Forget ``key``'s entry when it holds nothing (its read failed: a job not found)."""
        with self._lock:
            if self._slots.get(key) is slot and slot.loaded_at is None:
                del self._slots[key]

    def _now_epoch(self) -> int:
        with self._lock:
            return self._epoch

    def _current(self, slot: _Kept, epoch: int) -> bool:
        return (
            slot.loaded_at is not None
            and slot.epoch == epoch
            and self._clock() - slot.loaded_at < self.ttl
        )

    def read(self, op: str, key: Hashable, load: Callable[[], T], *, fresh: bool = False) -> T:
        """``load()``'s value for ``key`` (``op`` names the platform call in the metrics): the
        kept one while it is younger than ``ttl`` and no write came since, else loaded now (and
        kept, unless a write came while loading); with ``fresh``, loaded now."""
        if self.ttl == 0:
            self._count(op, "platform")
            return load()
        kept = (op, key)
        slot = self._slot(kept)
        with slot.lock:
            epoch = self._now_epoch()
            if not fresh and self._current(slot, epoch):
                self._count(op, "cache")
                return slot.value  # type: ignore[no-any-return]
            self._count(op, "platform")
            started = self._clock()
            try:
                value = load()
            except BaseException:
                self._drop(kept, slot)
                raise
            with self._lock:
                if self._epoch == epoch:
                    slot.value, slot.loaded_at, slot.epoch = value, started, epoch
            return value

    def invalidate(self) -> None:
        """The server wrote: nothing read before is answered again."""
        with self._lock:
            self._epoch += 1
            self._slots.clear()
