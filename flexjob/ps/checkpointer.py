"""``PsCheckpointer``: writes one PS's partition to the job's PS checkpoint directory every
``interval`` seconds and whenever asked, from a background thread.

Only the in-memory copy (``PsService.snapshot``) blocks the PS's calls; the file is written
afterwards, outside every lock. Each checkpoint logs ``event=ps_checkpoint`` with the blocking
and writing times. Not for the file format (``ps.checkpoint_io``).
"""

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from flexjob.core.ps.set_change import snapshot_totals
from flexjob.ps.checkpoint_io import write_snapshot
from flexjob.ps.service import PsService
from flexjob.rpc.ps_control import Checkpointed

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CheckpointDone(Checkpointed):
    """A checkpoint written (what the master's PS control hears) and what it cost."""

    rows: int
    blocked_s: float
    write_s: float


class PsCheckpointer:
    def __init__(self, service: PsService, directory: Path, interval: float) -> None:
        self._service = service
        self._directory = directory
        self._interval = interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._write_lock = threading.Lock()
        self.last: CheckpointDone | None = None
        self._thread = threading.Thread(target=self._loop, name="ps-checkpoint", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def request(self) -> None:
        """Checkpoint soon (the background thread wakes up)."""
        self._wake.set()

    def stop(self) -> None:
        """Stop the thread after one last checkpoint (a PS stopped on purpose loses nothing)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()

    def exclusive(self, fn: Callable[[], T]) -> T:
        """``fn()`` with no checkpoint running meanwhile (a PS-set change reloads the
        partition under it)."""
        with self._write_lock:
            return fn()

    def checkpoint_now(self) -> CheckpointDone | None:
        """Copy and write the partition now; ``None`` when the PS has no model yet."""
        if not self._service.configured:
            return None
        with self._write_lock:
            snap, blocked = self._service.snapshot()
            start = time.perf_counter()
            path = write_snapshot(self._directory, snap)
            written = time.perf_counter() - start
        done = CheckpointDone(
            str(path), snap.version, snapshot_totals(snap), snap.num_rows, blocked, written
        )
        self.last = done
        log.info(
            "event=ps_checkpoint index=%d version=%d rows=%d blocked_ms=%.1f write_ms=%.1f path=%s",
            snap.index,
            done.version,
            done.rows,
            done.blocked_s * 1e3,
            done.write_s * 1e3,
            path,
        )
        return done

    def _loop(self) -> None:
        while True:
            self._wake.wait(self._interval)
            self._wake.clear()
            try:
                self.checkpoint_now()
            except Exception:  # a failed checkpoint must not end the next ones
                log.exception("event=ps_checkpoint_failed directory=%s", self._directory)
            if self._stop.is_set():
                return
