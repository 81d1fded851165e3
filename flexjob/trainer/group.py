"""Forming and tearing down the torch process group of one generation, in place.

A generation's group is built over the job's TCPStore with a key prefix unique to that
generation (``PrefixStore``), so keys of earlier rounds never leak into a new one. Destroying
and re-creating the group keeps the process (and its imported torch, data and model) alive.
Not for choosing ranks (the master does) or syncing model state (``flexjob.trainer.rank_sync``).
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import socket
import stat

import torch.distributed as dist
from torch.distributed import PrefixStore, TCPStore  # type: ignore[attr-defined]

from flexjob.trainer.world import Generation

log = logging.getLogger(__name__)

BACKEND = "gloo"
#: Where this process's open descriptors are listed (Linux); elsewhere ``abort_group`` cannot
#: find the group's sockets and peers notice a broken world through their own collectives.
FD_DIR = "/proc/self/fd"


class CollectiveError(RuntimeError):
    """A collective failed because the world changed (a peer died or the group was torn down)."""


def is_collective_error(exc: BaseException) -> bool:
    """True for the errors torch raises when a peer of a collective goes away."""
    dist_errors: tuple[type[BaseException], ...] = (CollectiveError,)
    for name in ("DistError", "DistBackendError", "DistNetworkError", "DistStoreError"):
        err = getattr(dist, name, None)
        if isinstance(err, type):
            dist_errors = (*dist_errors, err)
    if isinstance(exc, dist_errors):
        return True
    if isinstance(exc, RuntimeError):
        text = str(exc)
        markers = ("gloo", "Connection reset", "Connection closed", "Broken pipe", "Timed out")
        return any(m in text for m in markers)
    return False


class StoreCache:
    """One TCPStore client per store address, reused across generations."""

    def __init__(self, timeout_s: float) -> None:
        self._timeout = datetime.timedelta(seconds=timeout_s)
        self._stores: dict[str, TCPStore] = {}

    def get(self, address: str) -> TCPStore:
        store = self._stores.get(address)
        if store is None:
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"store_address {address!r} is not HOST:PORT")
            store = TCPStore(host, int(port), is_master=False, timeout=self._timeout)
            self._stores[address] = store
        return store

    def forget(self, address: str) -> None:
        """Drop the client of ``address`` (the master may have closed it: a world that broke
        while forming); the next ``get`` connects again."""
        self._stores.pop(address, None)


def _sockets() -> dict[int, int]:
    """This process's open sockets: descriptor → inode (empty where ``FD_DIR`` is missing)."""
    found: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir(FD_DIR):
            with contextlib.suppress(OSError, ValueError):
                st = os.stat(f"{FD_DIR}/{name}")
                if stat.S_ISSOCK(st.st_mode):
                    found[int(name)] = st.st_ino
    return found


def _is_peer_connection(fd: int) -> bool:
    """True for a connected stream socket; False for a listener (shutting one down makes
    gloo's accept thread fail, which ends the process) and anything else."""
    try:
        with socket.socket(fileno=os.dup(fd)) as sock:
            if sock.type != socket.SOCK_STREAM:
                return False
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                return False
            sock.getpeername()
            return True
    except OSError:
        return False


#: The current group's connections to its peers (not its listener): descriptor → inode.
_group_sockets: dict[int, int] = {}


def abort_group() -> int:
    """Shut down the current group's sockets; returns how many.

    A rank whose collective failed (a peer died) calls this at once: its peers blocked in a
    collective with it read end-of-file and fail now, instead of waiting for a peer of
    theirs to notice or for the collective timeout; gloo has no abort that wakes a blocked
    collective (``ProcessGroup.abort`` leaves it waiting). The descriptors stay open (torch
    closes them with the group); a descriptor reused since for another socket is left alone."""
    done = 0
    for fd, inode in list(_group_sockets.items()):
        try:
            if os.stat(f"{FD_DIR}/{fd}").st_ino != inode:
                continue
            with socket.socket(fileno=os.dup(fd)) as sock:
                sock.shutdown(socket.SHUT_RDWR)
            done += 1
        except OSError:
            continue  # closed meanwhile: nothing to wake
    _group_sockets.clear()
    return done


#: The group ``destroy_group`` tore down last, kept alive until the next one is torn down.
#: A gloo group's destructor joins its worker threads holding the GIL, and a worker that is
#: still letting go of a just-finished collective's Python tensors needs the GIL: when the
#: last reference to a group went with a DDP model right after a collective (a trainer
#: closed, a world re-formed), the process deadlocked. A group kept one world longer dies
#: when its workers have long been idle.
_retired: list[object] = []


def destroy_group() -> None:
    """Tear down the default group if there is one; errors of a broken group are ignored.
    The group object itself lives on until the next call (``_retired``)."""
    _group_sockets.clear()
    if not dist.is_initialized():
        return
    retired = dist.group.WORLD
    try:
        dist.destroy_process_group()
    except Exception as exc:  # a broken group may fail to shut down cleanly
        log.debug("destroying a broken process group: %s", exc)
    _retired[:] = [retired]


def _reset_group_names() -> None:
    """Name the next default group as a fresh process would (``"0"``).

    torch names the default group after a counter that ``init_process_group`` bumps before it
    connects and only ``destroy_process_group`` resets: after a failed init (a peer that never
    came, e.g. one stopped with SIGSTOP) this process would look up its peers under
    ``pg//1/...`` while every other rank of the next world uses ``pg//0/...``, and forming it
    would time out. Every rank must use the same name, so it is reset before each init."""
    c10d = dist.distributed_c10d
    if not dist.is_initialized():
        c10d._world.group_count = 0


def form_group(
    gen: Generation, rank: int, world_size: int, stores: StoreCache, timeout_s: float
) -> None:
    """Create the default process group of ``gen`` (blocks until all its ranks arrive)."""
    destroy_group()
    _reset_group_names()
    prefix = gen.store_prefix or f"flexjob/round-{gen.round}"
    store = PrefixStore(prefix.rstrip("/") + "/pg/", stores.get(gen.store_address))
    before = _sockets()
    try:
        dist.init_process_group(
            BACKEND,
            store=store,
            rank=rank,
            world_size=world_size,
            timeout=datetime.timedelta(seconds=timeout_s),
        )
    except Exception:
        stores.forget(gen.store_address)
        raise
    opened = {fd: ino for fd, ino in _sockets().items() if before.get(fd) != ino}
    _group_sockets.update({fd: ino for fd, ino in opened.items() if _is_peer_connection(fd)})
    log.info("formed round %d: rank %d of %d", gen.round, rank, world_size)
