"""The agent's half of flash checkpoints: write workers' shared-memory copies to storage.

Each worker gets one end of a datagram socket pair (``$FLEXJOB_FLASH_FD``, inherited, so no
other process can talk to the agent through it) and its shared-memory directory
(``$FLEXJOB_FLASH_SHM_DIR``). A thread reads the workers' notes and, for a note that asks
for it, writes the newest complete copy to ``<checkpoint dir>/checkpoint.flash`` while the
training goes on (``trainer.flash_files.persist_latest``). When a worker fails, the agent
writes its last complete copy (the copy outlives the process); when the agent stops, it
writes every worker's newest copy and frees the shared memory. Not for reading tensors: the
agent never imports torch.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import socket
import threading
from pathlib import Path

from flexjob.api import names
from flexjob.trainer import flash_files

log = logging.getLogger(__name__)

#: Seconds the agent's stop waits for the last writes to storage.
FINAL_WRITE_S = 120.0


class FlashSaver:
    """Writes the flash copies of this node's workers to storage, in a background thread."""

    def __init__(self, node_id: str) -> None:
        self._node_id = node_id
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._ends: dict[int, socket.socket] = {}  # local rank -> the agent's end
        self._dirs: dict[int, Path] = {}  # local rank -> its shared-memory directory
        self._due: set[int] = set()  # local ranks whose newest copy is to be written
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="flexjob-flash-saver", daemon=True)
        self._thread.start()
        #: Copies written to storage (for tests and logs).
        self.written = 0

    def worker_env(
        self, local_rank: int, run_dir: str, channel: bool = True
    ) -> tuple[dict[str, str], int | None]:
        """Environment and the fd to inherit for a new worker of ``local_rank`` (close it in
        the agent with ``started`` once the process runs). Its shared-memory directory is
        named for the run directory and the node, so it outlives worker and agent restarts
        (a copy of another job in it is never restored: the copy names its checkpoint
        directory). Without ``channel`` (a process the agent did not start) the worker writes
        its copies to storage itself; a failure's copy is still the agent's to write."""
        shm_dir = flash_files.default_shm_dir(run_dir, self._node_id, local_rank)
        with self._lock:
            old = self._ends.pop(local_rank, None)
            if old is not None:
                self._selector.unregister(old)
                old.close()
            self._dirs[local_rank] = shm_dir
        env = {names.ENV_FLASH_SHM_DIR: str(shm_dir)}
        if not channel:
            return env, None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        ours.setblocking(False)
        with self._lock:
            self._ends[local_rank] = ours
            self._selector.register(ours, selectors.EVENT_READ, local_rank)
        theirs.set_inheritable(True)
        fd = theirs.detach()
        env[names.ENV_FLASH_FD] = str(fd)
        return env, fd

    @staticmethod
    def started(fd: int | None) -> None:
        """The worker holds its end now: the agent's copy of it is closed."""
        if fd is not None:
            os.close(fd)

    def worker_failed(self, local_rank: int) -> None:
        """Write the failed worker's last complete copy to storage (in the background)."""
        self._mark_due(local_rank)

    def _mark_due(self, local_rank: int) -> None:
        with self._lock:
            if local_rank not in self._dirs:
                return
            self._due.add(local_rank)
        self._wake_w.send(b"\0")

    def _run(self) -> None:
        while not self._stopping:
            for key, _ in self._selector.select(timeout=1.0):
                if key.data is None:
                    self._drain(self._wake_r)
                else:
                    self._read_notes(key.fileobj, key.data)  # type: ignore[arg-type]
            self._write_due()

    @staticmethod
    def _drain(sock: socket.socket) -> list[bytes]:
        got = []
        while True:
            try:
                got.append(sock.recv(4096))
            except (BlockingIOError, OSError):
                return got

    def _read_notes(self, sock: socket.socket, local_rank: int) -> None:
        for raw in self._drain(sock):
            try:
                note = json.loads(raw)
            except ValueError:
                log.warning("worker %d sent a note that is not JSON: %r", local_rank, raw[:80])
                continue
            if isinstance(note, dict) and note.get("persist"):
                with self._lock:
                    self._due.add(local_rank)

    def _write_due(self) -> None:
        with self._lock:
            due = [self._dirs[r] for r in sorted(self._due)]
            self._due.clear()
        for shm_dir in due:
            try:
                if flash_files.persist_latest(shm_dir) is not None:
                    self.written += 1
            except Exception as exc:  # the thread goes on: the next copy may well work
                log.warning("flash copy in %s not written to storage: %s", shm_dir, exc)

    def close(self, free_memory: bool = True) -> None:
        """Stop the thread, write every worker's newest copy, free the shared memory."""
        self._stopping = True
        self._wake_w.send(b"\0")
        self._thread.join(FINAL_WRITE_S)
        with self._lock:
            self._due.update(self._dirs)
        self._write_due()
        with self._lock:
            for sock in self._ends.values():
                sock.close()
            self._ends.clear()
            dirs = list(self._dirs.values())
        if free_memory:
            for shm_dir in dirs:
                flash_files.remove_slots(shm_dir)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
