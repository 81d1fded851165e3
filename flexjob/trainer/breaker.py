"""Breaking a failed world so that every survivor leaves it now: one strategy per backend.

When a rank's collective fails (a peer died), its peers may still be blocked in a collective
with it; the rank breaks the world so that they fail too and all of them join the next one,
in their own processes. ``GlooBreaker`` shuts down the gloo group's connections (found in
``/proc/self/fd``: gloo has no abort that wakes a blocked collective); ``NcclBreaker`` aborts
the NCCL communicators (``torch.distributed.distributed_c10d._abort_process_group``, which
also wakes a collective blocked in another thread). The trainer calls the same three methods
on either (``trainer.group``), so the CPU tests run the path a GPU job takes. Not for
forming the group (``trainer.group``) nor for choosing the backend (``trainer.device``).

NCCL settings (set by ``NcclBreaker.prepare`` before the group forms, unless the user set
them): ``TORCH_NCCL_BLOCKING_WAIT=1``, so a failed or timed-out collective raises
``DistBackendError`` in the thread that waits for it (the trainer's step) instead of only in
NCCL's watchdog; ``TORCH_NCCL_ASYNC_ERROR_HANDLING=2`` (clean up only), so the watchdog aborts
the communicators of a failed or hung collective but never ends the process. A hung
collective is one that outlives the group's timeout (``FLEXJOB_COLLECTIVE_TIMEOUT``, a third
of the agent's hang timeout). A value of 1 or 3 there (tear the process down: torchrun's
default) makes a broken world restart the process instead (logged once).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import stat
from typing import Protocol

import torch.distributed as dist

from flexjob.api import names
from flexjob.core.training import devices
from flexjob.trainer.settings import TrainerSettings

log = logging.getLogger(__name__)

#: Where this process's open descriptors are listed (Linux); elsewhere ``GlooBreaker``
#: cannot find the group's sockets and peers notice a broken world through their own
#: collectives.
FD_DIR = "/proc/self/fd"
#: What ``NcclBreaker.prepare`` sets unless the user did (the module docstring says why).
NCCL_SETTINGS = {names.ENV_NCCL_BLOCKING_WAIT: "1", names.ENV_NCCL_ASYNC_ERROR_HANDLING: "2"}
#: ``TORCH_NCCL_ASYNC_ERROR_HANDLING`` values whose watchdog ends the process on an error.
NCCL_TEARDOWN = ("1", "3")


class WorldBreaker(Protocol):
    """What the trainer does around a group of one backend."""

    def prepare(self) -> None:
        """Right before the group forms."""
        ...

    def formed(self) -> None:
        """Right after the group formed."""
        ...

    def break_world(self) -> int:
        """Make the peers blocked in a collective with this rank fail now; how many
        connections or communicators it broke."""
        ...


def in_place_problem(backend: str) -> str | None:
    """Why a broken world of ``backend`` cannot be re-formed in this process (None: it can).
    With a reason the trainer ends the process on a broken world and the agent restarts it."""
    if backend != devices.NCCL:
        return None
    c10d = dist.distributed_c10d
    if not hasattr(c10d, "_abort_process_group"):
        return "this torch has no distributed_c10d._abort_process_group to abort NCCL with"
    mode = TrainerSettings.current().nccl_async_error_handling
    if mode in NCCL_TEARDOWN:
        name = names.ENV_NCCL_ASYNC_ERROR_HANDLING
        return f"{name}={mode} ends the process on a failed collective"
    return None


def for_backend(backend: str) -> WorldBreaker:
    """The breaker of a group of ``backend``."""
    return NcclBreaker() if backend == devices.NCCL else GlooBreaker()


class GlooBreaker:
    """Shuts down the connections to its peers that the group opened (not its listener:
    shutting that down makes gloo's accept thread fail, which ends the process)."""

    def __init__(self) -> None:
        self._before: dict[int, int] = {}
        #: The group's connections to its peers: descriptor → inode.
        self._sockets: dict[int, int] = {}

    def prepare(self) -> None:
        self._sockets.clear()
        self._before = _sockets()

    def formed(self) -> None:
        opened = {fd: ino for fd, ino in _sockets().items() if self._before.get(fd) != ino}
        self._sockets = {fd: ino for fd, ino in opened.items() if _is_peer_connection(fd)}

    def break_world(self) -> int:
        """The descriptors stay open (torch closes them with the group); one reused since
        for another socket is left alone. Peers read end-of-file and fail at once."""
        done = 0
        for fd, inode in list(self._sockets.items()):
            try:
                if os.stat(f"{FD_DIR}/{fd}").st_ino != inode:
                    continue
                with socket.socket(fileno=os.dup(fd)) as sock:
                    sock.shutdown(socket.SHUT_RDWR)
                done += 1
            except OSError:
                continue  # closed meanwhile: nothing to wake
        self._sockets.clear()
        return done


class NcclBreaker:
    """Aborts the NCCL communicators of every group of this process (torch then forgets
    the groups: the next ``init_process_group`` forms a fresh world)."""

    def __init__(self) -> None:
        self._formed = False

    def prepare(self) -> None:
        for key, value in NCCL_SETTINGS.items():
            os.environ.setdefault(key, value)

    def formed(self) -> None:
        self._formed = True

    def break_world(self) -> int:
        if not self._formed or not dist.is_initialized():
            return 0  # aborted already (by this rank, or torch's watchdog cleaned it up)
        self._formed = False
        try:
            dist.distributed_c10d._abort_process_group()
        except Exception as exc:  # an aborted communicator may fail to abort again
            log.debug("aborting the NCCL group: %s", exc)
        return 1


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
    """True for a connected stream socket; False for a listener and anything else."""
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
