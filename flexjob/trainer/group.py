"""Forming and tearing down the torch process group of one generation, in place.

A generation's group is built over the job's TCPStore with a key prefix unique to that
generation (``PrefixStore``), so keys of earlier rounds never leak into a new one. Destroying
and re-creating the group keeps the process (and its imported torch, data and model) alive.
Not for choosing ranks (the master does) or syncing model state (``flexjob.trainer.rank_sync``).
"""

from __future__ import annotations

import datetime
import logging

import torch.distributed as dist
from torch.distributed import PrefixStore, TCPStore  # type: ignore[attr-defined]

from flexjob.api.errors import TrainerError
from flexjob.core.training import devices
from flexjob.trainer.breaker import WorldBreaker, for_backend
from flexjob.trainer.world import Generation

log = logging.getLogger(__name__)


class CollectiveError(TrainerError, RuntimeError):
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
        markers = (
            "gloo", "NCCL", "Connection reset", "Connection closed", "Broken pipe", "Timed out",
        )  # fmt: skip
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


#: The breaker of the current group (``trainer.breaker``), set when it forms.
_breaker: list[WorldBreaker] = []


def abort_group() -> int:
    """Break the current group (``WorldBreaker.break_world``: gloo's connections shut down,
    NCCL's communicators aborted) so that its peers blocked in a collective with this rank
    fail now; returns how many connections or communicators it broke (0: no group)."""
    return _breaker.pop().break_world() if _breaker else 0


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
    _breaker.clear()
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
    gen: Generation,
    rank: int,
    world_size: int,
    stores: StoreCache,
    timeout_s: float,
    backend: str = devices.GLOO,
) -> None:
    """Create the default process group of ``gen`` on ``backend`` (blocks until all its ranks
    arrive); its breaker (``trainer.breaker``) is what ``abort_group`` uses."""
    destroy_group()
    _reset_group_names()
    prefix = gen.store_prefix or f"flexjob/round-{gen.round}"
    store = PrefixStore(prefix.rstrip("/") + "/pg/", stores.get(gen.store_address))
    breaker = for_backend(backend)
    breaker.prepare()
    try:
        dist.init_process_group(
            backend,
            store=store,
            rank=rank,
            world_size=world_size,
            timeout=datetime.timedelta(seconds=timeout_s),
        )
    except Exception:
        stores.forget(gen.store_address)
        raise
    breaker.formed()
    _breaker[:] = [breaker]
    log.info("formed round %d: rank %d of %d on %s", gen.round, rank, world_size, backend)
