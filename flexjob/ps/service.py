"""``PsService``: one PS replica's partition behind locks, with request and process stats.

Implements ``rpc.ps_messages.PsBackend`` over a ``core.ps.parameters.PsStore``: one lock per
embedding
table and one for the dense parameters, so lookups and pushes of different tables run side by
side. Counts requests for requests/s and samples the process's CPU and memory (psutil) for
``stats``. Not for transport (``rpc.ps_server``) or process life (``ps.main``).
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import psutil

from flexjob.api.errors import InvalidSpecError
from flexjob.core.ps.checkpoint import PsSnapshot, restore, snapshot
from flexjob.core.ps.parameters import ModelSpec, PsStore
from flexjob.core.ps.table import RowsExport
from flexjob.rpc.ps_messages import Floats, Ids, PsStats

log = logging.getLogger(__name__)

#: Rows copied per hold of a table's lock while checkpointing (about 4 MiB at 16 floats).
SNAPSHOT_CHUNK_ROWS = 65_536


class PsService:
    def __init__(
        self, index: int = 0, num_ps: int = 1, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.index = index
        self.num_ps = num_ps
        self._store = PsStore()
        self._model_lock = threading.Lock()
        self._dense_lock = threading.Lock()
        self._table_locks: dict[str, threading.Lock] = {}
        self._requests = 0
        self._clock = clock
        self._window = (clock(), 0)  # (time, requests) at the last stats call
        self._process = psutil.Process()
        self._process.cpu_percent()  # the first call only starts the measurement

    # ---- PsBackend ----
    def configure(self, model: ModelSpec, num_ps: int) -> tuple[int, bool]:
        self._count()
        if num_ps != self.num_ps:
            raise InvalidSpecError(
                f"num_ps: the caller partitioned for {num_ps} PS, this PS set has {self.num_ps}"
            )
        with self._model_lock, self._dense_lock:
            created = self._store.configure(model)
            for name in self._store.tables:
                self._table_locks.setdefault(name, threading.Lock())
            if created:
                log.info(
                    "event=ps_configured index=%d tables=%s dense=%d optimizer=%s",
                    self.index,
                    sorted(self._store.tables),
                    len(self._store.dense),
                    model.optimizer.kind.value,
                )
            return self._store.version, created

    def pull_dense(self, known_version: int) -> tuple[int, Mapping[str, Floats]]:
        self._count()
        with self._dense_lock:
            version = self._store.version
            if known_version == version:
                return version, {}
            return version, {k: v.copy() for k, v in self._store.dense.items()}

    def push_dense(self, grads: Mapping[str, Floats], base_version: int) -> int:
        self._count()
        with self._dense_lock:
            return self._store.push_dense(grads)

    def lookup(self, table: str, ids: Ids) -> Floats:
        self._count()
        held = self._store.table(table)
        with self._table_locks[table]:
            return held.lookup(ids)

    def push_rows(self, table: str, ids: Ids, grads: Floats) -> int:
        self._count()
        held = self._store.table(table)
        with self._table_locks[table]:
            return held.push(ids, np.asarray(grads, dtype=np.float32))

    def push_lookup(
        self, table: str, push_ids: Ids, grads: Floats, lookup_ids: Ids
    ) -> tuple[int, Floats]:
        self._count()
        held = self._store.table(table)
        with self._table_locks[table]:
            return held.push_lookup(push_ids, np.asarray(grads, dtype=np.float32), lookup_ids)

    def stats(self) -> PsStats:
        now, requests = self._clock(), self._requests
        then, before = self._window
        self._window = (now, requests)
        rate = (requests - before) / (now - then) if now > then else 0.0
        tables = {n: (t.num_rows, t.nbytes) for n, t in self._store.tables.items()}
        dense_bytes = sum(v.nbytes for v in self._store.dense.values())
        slots = 1 + len(self._store.optimizer.slot_names) if self._store.optimizer else 1
        return PsStats(
            rows=sum(r for r, _ in tables.values()),
            bytes=sum(b for _, b in tables.values()) + dense_bytes * slots,
            requests=requests,
            requests_per_second=rate,
            cpu_percent=self._process.cpu_percent(),
            memory_bytes=self._process.memory_info().rss,
            version=self._store.version,
            index=self.index,
            num_ps=self.num_ps,
            tables=tables,
        )

    # ---- checkpoints ----
    @property
    def configured(self) -> bool:
        return self._store.configured

    @property
    def version(self) -> int:
        """Dense updates applied so far (a restored PS: counted from its checkpoint)."""
        return self._store.version

    @property
    def dirty_rows(self) -> int:
        """Embedding rows pushed since the last checkpoint copied them (lost if this PS died
        now; read without the table locks: a count a push later is as good)."""
        return sum(t.dirty_rows for t in list(self._store.tables.values()))

    def snapshot(self) -> tuple[PsSnapshot, float]:
        """A copy of the partition, and the longest time any call waited for it.

        Each table is copied in chunks of ``SNAPSHOT_CHUNK_ROWS`` rows, holding that table's
        lock for one chunk at a time into buffers prepared outside every lock: a call waits
        at most one chunk's copy. Each row is copied whole between two pushes, so every row
        is one of its real states; rows created after the copy began are left for the next
        checkpoint (they are new, and "updates since the last checkpoint may be lost" holds).
        """
        longest = 0.0
        rows: dict[str, RowsExport] = {}
        with self._model_lock:  # configure adds the tables and their locks under it
            tables = sorted(self._table_locks)
        for name in tables:
            table, lock = self._store.tables[name], self._table_locks[name]
            with lock:
                n = table.num_rows
            out = table.empty_export(n)
            for start in range(0, n, SNAPSHOT_CHUNK_ROWS):
                began = time.perf_counter()
                with lock:
                    table.export_into(out, start, min(n, start + SNAPSHOT_CHUNK_ROWS))
                longest = max(longest, time.perf_counter() - began)
            rows[name] = out
        began = time.perf_counter()
        with self._model_lock, self._dense_lock:
            snap = snapshot(self._store, self.index, self.num_ps, rows)
        return snap, max(longest, time.perf_counter() - began)

    def restore(self, snapshots: Sequence[PsSnapshot]) -> int:
        """Take this PS's share of a whole earlier set's ``snapshots`` (before serving);
        returns the rows loaded."""
        with self._model_lock, self._dense_lock:
            loaded = restore(self._store, snapshots, self.index, self.num_ps)
            for name in self._store.tables:
                self._table_locks.setdefault(name, threading.Lock())
        log.info(
            "event=ps_restored index=%d num_ps=%d from_num_ps=%d rows=%d version=%d",
            self.index,
            self.num_ps,
            snapshots[0].num_ps,
            loaded,
            self._store.version,
        )
        return loaded

    def reload(self, index: int, num_ps: int, snapshots: Sequence[PsSnapshot]) -> int:
        """Drop the partition and take, as PS ``index`` of ``num_ps``, this share of a whole
        earlier set's ``snapshots`` (a PS-set change; its data calls are held off meanwhile);
        no snapshots: the set had no model yet, this PS starts empty."""
        with self._model_lock, self._dense_lock:
            self._store = PsStore()
            self._table_locks = {}
            self.index, self.num_ps = index, num_ps
        return self.restore(snapshots) if snapshots else 0

    def _count(self) -> None:
        self._requests += 1  # a lost increment under a race only blurs a rate
