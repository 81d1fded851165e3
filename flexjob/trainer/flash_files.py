"""Flash checkpoint files without torch: where the shared-memory slots live, their headers,
their locks, the copy to storage and the worker's note to its agent.

Shared by the trainer (which writes the slots) and the agent (which writes them to storage in
the background and after a failure); the agent never imports torch for it. The layout and
the rules are ``flexjob.core.training.flash``; the tensors are ``flexjob.trainer.flash``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from flexjob.api import names
from flexjob.core.training.flash import (
    HEADER_SIZE,
    SLOTS,
    SlotHeader,
    decode_header,
    should_persist,
)
from flexjob.trainer.settings import TrainerSettings, current_or

log = logging.getLogger(__name__)

#: The flash copy the agent writes into the checkpoint directory.
FLASH_FILE = "checkpoint.flash"
SHM_ROOT = Path("/dev/shm")
#: How long a reader waits for a slot the trainer is writing.
LOCK_WAIT_S = 30.0


def shm_root() -> Path:
    """``/dev/shm`` (memory), else the temp directory where there is none."""
    return SHM_ROOT if SHM_ROOT.is_dir() else Path(tempfile.gettempdir())


def default_shm_dir(storage_dir: str | os.PathLike[str], node_id: str, local_rank: int) -> Path:
    """The shared-memory directory of one process: named for the checkpoint directory and the
    node, so a restart of the same job's process finds it and another job never does."""
    key = f"{os.path.abspath(os.fspath(storage_dir))}\0{node_id}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return shm_root() / f"flexjob-flash-{digest}-{local_rank}"


def shm_dir_from_env(
    storage_dir: str | os.PathLike[str],
    node_id: str,
    local_rank: int,
    settings: TrainerSettings | None = None,
) -> Path:
    """The directory the agent named (``$FLEXJOB_FLASH_SHM_DIR``), else the default one."""
    given = current_or(settings).flash_shm_dir
    return Path(given) if given else default_shm_dir(storage_dir, node_id, local_rank)


def slot_paths(shm_dir: Path) -> list[Path]:
    return [shm_dir / f"slot-{i}" for i in range(SLOTS)]


def storage_file(storage_dir: str | os.PathLike[str]) -> Path:
    return Path(storage_dir) / FLASH_FILE


def read_header(path: Path) -> SlotHeader | None:
    """The header of the copy in ``path``; None when there is no file or no flash header."""
    try:
        with path.open("rb") as f:
            return decode_header(f.read(HEADER_SIZE))
    except OSError:
        return None


@contextlib.contextmanager
def locked(fd: int, exclusive: bool, wait_s: float = LOCK_WAIT_S) -> Iterator[bool]:
    """Hold ``flock`` on ``fd`` (True) or give up (False): at once when ``wait_s`` is 0, else
    after waiting that long. The lock goes with the process (a killed writer frees it)."""
    mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, mode)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                yield False
                return
            time.sleep(0.005)
    try:
        yield True
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def try_lock(fd: int) -> bool:
    """Take ``fd``'s exclusive lock now, or say it is held (see ``locked``)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)


def _copy(src: int, dst: int, count: int) -> None:
    offset = 0
    while offset < count:
        sent = os.sendfile(dst, src, offset, count - offset)
        if sent == 0:
            raise OSError(f"flash copy ended after {offset} of {count} bytes")
        offset += sent


def persist_slot(slot: Path) -> SlotHeader | None:
    """Write the complete copy in ``slot`` to ``<its storage dir>/checkpoint.flash`` (temp
    file, fsync, rename) unless storage already holds one as new; returns what was written.
    Holds the slot's shared lock meanwhile, so the trainer never overwrites it mid-copy."""
    try:
        fd = os.open(slot, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        with locked(fd, exclusive=False) as got:
            if not got:
                log.warning("flash slot %s stayed locked for %.0f s", slot, LOCK_WAIT_S)
                return None
            header = decode_header(os.pread(fd, HEADER_SIZE, 0))
            if header is None or not header.storage_dir:
                return None
            target = storage_file(header.storage_dir)
            if not should_persist(header, read_header(target)):
                return None
            target.parent.mkdir(parents=True, exist_ok=True)
            out, tmp = tempfile.mkstemp(prefix=".flash-", suffix=".tmp", dir=target.parent)
            try:
                _copy(fd, out, header.total_len)
                os.fsync(out)
                os.close(out)
                out = -1
                if should_persist(header, read_header(target)):  # another writer was faster
                    os.replace(tmp, target)
            finally:
                if out >= 0:
                    os.close(out)
                Path(tmp).unlink(missing_ok=True)
    finally:
        os.close(fd)
    log.info("flash checkpoint at step %d written to %s", header.step, target)
    return header


def persist_latest(shm_dir: Path) -> SlotHeader | None:
    """Write the newest complete copy of ``shm_dir`` to storage (see ``persist_slot``); a
    slot found torn under its lock (the trainer died writing it) gives way to the other."""
    by_seq = sorted(
        ((read_header(p), p) for p in slot_paths(shm_dir)),
        key=lambda hp: hp[0].seq if hp[0] is not None else -1,
        reverse=True,
    )
    for header, path in by_seq:
        if header is None:
            continue
        written = persist_slot(path)
        if written is not None:
            return written
        now = read_header(path)
        if now is not None and now.sealed:
            return None  # complete, and storage already as new
    return None


def remove_slots(shm_dir: Path) -> None:
    """Free a process's shared memory (after its copies are on storage)."""
    for path in slot_paths(shm_dir):
        path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        shm_dir.rmdir()


class FlashNotice:
    """The worker's end of its agent's socket (``$FLEXJOB_FLASH_FD``): one datagram per save,
    never blocking (a note the agent missed is made up by the next, and by the failure path,
    which reads the slots themselves)."""

    def __init__(self, fd: int) -> None:
        # A duplicate: another trainer of the same process may wrap the same inherited fd.
        sock = socket.socket(fileno=os.dup(fd))
        if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_DGRAM:
            sock.close()
            raise OSError(f"fd {fd} is no datagram socket of the agent")
        sock.setblocking(False)
        self._sock = sock

    @classmethod
    def from_env(cls, settings: TrainerSettings | None = None) -> FlashNotice | None:
        value = current_or(settings).flash_fd
        if not value:
            return None
        try:
            return cls(int(value))
        except (ValueError, OSError) as exc:
            log.warning("%s=%r is no socket of the agent: %s", names.ENV_FLASH_FD, value, exc)
            return None

    def send(self, seq: int, step: int, persist: bool) -> bool:
        message = json.dumps({"seq": seq, "step": step, "persist": persist}).encode()
        try:
            self._sock.send(message)
            return True
        except OSError:
            return False

    def close(self) -> None:
        self._sock.close()
