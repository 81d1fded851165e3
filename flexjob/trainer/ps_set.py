"""``PsSet``: a trainer's view of its job's parameter servers — every PS client, and the
partition plan that says which PS holds which dense tensor and which embedding row.

Rows of one batch are looked up and pushed on every PS of the set at once (gRPC futures);
dense tensors are sent to and pulled from the PS that ``core.ps.partition.assign_dense``
gives them. The set comes from the job master (``FLEXJOB_MASTER``: the PS set its driver
published, ``KV_PS_SET``), else from ``FLEXJOB_PS_ADDRESSES``. When a PS refuses a call because
its set is changing (``PsSetChangedError``: a PS-set change paused it, or the set's version
moved on) the call is sent again, after this set has re-resolved from the master, to the PS
that owns its rows or tensors in the new set; a refused call changed nothing, so it counts
once. Not for torch (``trainer.ps_torch`` builds modules on top of this).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from flexjob.api import names
from flexjob.api.errors import FlexjobError, PsSetChangedError, UnavailableError
from flexjob.core.ps.optim import OptimizerSpec
from flexjob.core.ps.parameters import ModelSpec
from flexjob.core.ps.partition import RowSplit, assign_dense, row_owners, split_ids
from flexjob.core.ps.set_change import PsSetInfo
from flexjob.core.ps.table import TableSpec
from flexjob.rpc.client import MasterClient
from flexjob.rpc.ps_client import Pending, PsClient
from flexjob.rpc.ps_messages import PsStats
from flexjob.rpc.ps_registry import read_set, resolve_ps
from flexjob.trainer.settings import TrainerSettings, current_or

log = logging.getLogger(__name__)
Floats = npt.NDArray[np.float32]
Push = tuple[npt.NDArray[np.int64], Floats]
R = TypeVar("R")
#: How long a call may keep being refused for a PS-set change before it fails.
CHANGE_DEADLINE_S = 180.0
CHANGE_BACKOFF_S = 0.05


def ps_addresses_from_env(
    timeout: float = 120.0, settings: TrainerSettings | None = None
) -> list[str]:
    """The PS addresses this process should use: ``FLEXJOB_PS_ADDRESSES``, else the ones
    registered with the master at ``FLEXJOB_MASTER`` (``FLEXJOB_NUM_PS`` of them)."""
    s = current_or(settings)
    if s.ps_addresses:
        return [a for a in s.ps_addresses.split(",") if a]
    master = s.master or ""
    num_ps = s.num_ps
    if not master or not num_ps.isdigit() or int(num_ps) < 1:
        raise RuntimeError(
            f"no PS set: set {names.ENV_PS_ADDRESSES}, or {names.ENV_MASTER} and "
            f"{names.ENV_NUM_PS} (the operator and `flexjob run --ps N` do)"
        )
    with MasterClient(master, f"ps-resolver-{os.getpid()}") as client:
        return resolve_ps(client, int(num_ps), timeout=timeout)


def ps_set_from_master(master: str, timeout: float = 120.0, newer_than: int = 0) -> PsSetInfo:
    """The PS set the master at ``master`` published, once its version is above
    ``newer_than``; ``TimeoutError`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    with MasterClient(master, f"ps-resolver-{os.getpid()}") as client:
        while True:
            current = read_set(client.kv_get)
            if current is not None and current.version > newer_than:
                return current
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no PS set newer than version {newer_than} within {timeout}s")
            time.sleep(CHANGE_BACKOFF_S)


class Sent(Generic[R]):
    """A call in flight on PS set ``version``; ``result()`` waits for it and, when the PS
    refused it for a PS-set change, sends it again (``resend``) on the re-resolved set."""

    def __init__(
        self, owner: PsSet, version: int | None, pending: Pending[R], resend: Callable[[], R]
    ) -> None:
        self._owner = owner
        self._version = version
        self._pending = pending
        self._resend = resend

    def result(self) -> R:
        try:
            return self._pending.result()
        except PsSetChangedError as exc:
            self._owner.changed(self._version, exc)
            return self._resend()
        except UnavailableError as exc:  # its PS went away for good: was the set changed?
            if not self._owner.changed(self._version, exc):
                raise
            return self._resend()


class PsSet:
    def __init__(
        self,
        addresses: Sequence[str],
        *,
        timeout: float = 30.0,
        version: int | None = None,
        master: str = "",
    ) -> None:
        """``version``: the PS-set version ``addresses`` belong to (None: unknown, calls
        carry none); ``master``: where to re-resolve the set when it changes ("" = nowhere:
        a refused call is sent again to the same PS once it resumes)."""
        if not addresses:
            raise ValueError("a PS set needs at least one address")
        self._timeout = timeout
        self._master = master
        self._model: tuple[OptimizerSpec, tuple[TableSpec, ...], dict[str, int]] | None = None
        self._retired: list[PsClient] = []
        self._use(tuple(addresses), version)

    def _use(self, addresses: tuple[str, ...], version: int | None) -> None:
        self.addresses = addresses
        self.version = version
        self.clients = tuple(
            PsClient(a, timeout=self._timeout, set_version=version) for a in addresses
        )
        self.dense_versions = [-1] * len(self.clients)
        self.dense_plan: dict[str, int] = {}
        if self._model is not None:
            self.dense_plan = assign_dense(self._model[2], self.num_ps)

    @classmethod
    def from_env(cls, timeout: float = 120.0, settings: TrainerSettings | None = None) -> PsSet:
        s = current_or(settings)
        if s.master:
            return cls.from_master(s.master, timeout)
        return cls(ps_addresses_from_env(timeout, s))

    @classmethod
    def from_master(cls, master: str, timeout: float = 120.0) -> PsSet:
        """The PS set the job master at ``master`` publishes (waiting for the first)."""
        current = ps_set_from_master(master, timeout)
        return cls(current.addresses, version=current.version, master=master)

    @property
    def num_ps(self) -> int:
        return len(self.clients)

    def close(self) -> None:
        for client in (*self.clients, *self._retired):
            client.close()

    # ---- PS-set changes ----
    def changed(self, sent_on: int | None, exc: FlexjobError) -> bool:
        """A PS refused (or could not take) a call sent on set ``sent_on``: switch to the
        newer set the master published, or (none yet: the change is under way) wait a
        moment. ``True`` when this set is newer than ``sent_on`` now."""
        if sent_on != self.version:
            return True  # another call already switched this set
        if not self._master:
            time.sleep(CHANGE_BACKOFF_S)
            return False
        try:
            newer = ps_set_from_master(
                self._master, timeout=CHANGE_BACKOFF_S * 4, newer_than=self.version or 0
            )
        except TimeoutError:
            return False
        log.info(
            "event=ps_set_resolved version=%d num_ps=%d refused=%r",
            newer.version,
            newer.num_ps,
            str(exc),
        )
        for old in self._retired:  # two sets ago: nothing waits on them any more
            old.close()
        self._retired = list(self.clients)  # calls may still be in flight on these
        self._use(newer.addresses, newer.version)
        return True

    def _again(self, fn: Callable[[], R]) -> R:
        """``fn()`` until no PS refuses it for a PS-set change (within ``CHANGE_DEADLINE_S``)."""
        deadline = time.monotonic() + CHANGE_DEADLINE_S
        while True:
            sent_on = self.version
            try:
                return fn()
            except PsSetChangedError as exc:
                if time.monotonic() >= deadline:
                    raise
                self.changed(sent_on, exc)
            except UnavailableError as exc:  # its PS went away for good: was the set changed?
                if not self.changed(sent_on, exc):
                    raise

    def configure(
        self,
        optimizer: OptimizerSpec,
        tables: Sequence[TableSpec],
        dense: Mapping[str, Floats],
    ) -> bool:
        """Declare the model on every PS (each gets its dense share); ``True`` when this call
        created it somewhere (the first worker), ``False`` when every PS had it already."""
        self._model = (optimizer, tuple(tables), {k: int(v.size) for k, v in dense.items()})

        def declare() -> bool:
            self.dense_plan = assign_dense(self._model[2], self.num_ps)  # type: ignore[index]
            created = False
            for ps, client in enumerate(self.clients):
                mine = {k: v for k, v in dense.items() if self.dense_plan[k] == ps}
                _, made = client.configure(ModelSpec(optimizer, tuple(tables), mine), self.num_ps)
                created = created or made
            return created

        return self._again(declare)

    # ---- embedding rows ----
    def lookup(
        self,
        table: str,
        ids: npt.NDArray[np.int64],
        push: tuple[npt.NDArray[np.int64], Floats] | None = None,
    ) -> tuple[Floats, RowSplit]:
        """Rows of the *unique* ids of ``ids`` (``split.unique`` order) from every PS at once,
        and the split (``rows[split.inverse]`` gives one row per input id). ``push``: row
        gradients (ids, one row each; duplicates summed) of an earlier step, sent in the same
        call to each PS, which applies them before its lookup: one round trip per PS (a part
        a PS refuses for a PS-set change goes to its new owners)."""
        if push is None:
            return self._again(lambda: self._lookup(table, ids, None))
        return self._lookup(table, ids, push)

    def _lookup(
        self,
        table: str,
        ids: npt.NDArray[np.int64],
        push: tuple[npt.NDArray[np.int64], Floats] | None,
    ) -> tuple[Floats, RowSplit]:
        split = split_ids(ids, self.num_ps)
        pending: Sequence[tuple[int, Pending[Floats] | Sent[Floats]]]
        if push is None:
            parts = [ps for ps in range(self.num_ps) if split.ids[ps].size]
            pending = [
                (ps, self.clients[ps].lookup_async(table, split.ids[ps], now=ps == parts[-1]))
                for ps in parts
            ]
        else:
            pending = self._push_lookup(table, split, *push)
        rows: Floats | None = None
        for ps, call in pending:
            got = call.result()
            if not split.positions[ps].size:
                continue  # a part that only pushed
            if rows is None:
                rows = np.empty((split.unique.size, got.shape[1]), dtype=np.float32)
            rows[split.positions[ps]] = got
        if rows is None:
            rows = np.empty((0, 0), dtype=np.float32)
        return rows, split

    def _push_lookup(
        self, table: str, split: RowSplit, push_ids: npt.NDArray[np.int64], grads: Floats
    ) -> list[tuple[int, Sent[Floats]]]:
        owners = row_owners(push_ids, self.num_ps)
        mine = [owners == ps for ps in range(self.num_ps)]
        parts = [ps for ps in range(self.num_ps) if split.ids[ps].size or mine[ps].any()]
        sent = []
        for ps in parts:
            wanted, pushed = split.ids[ps], (push_ids[mine[ps]], grads[mine[ps]])

            def resend(wanted: npt.NDArray[np.int64] = wanted, pushed: Push = pushed) -> Floats:
                # Refused: the PS applied nothing. ``wanted`` is sorted and unique, so the
                # new set's answer comes in its order.
                return self.lookup(table, wanted, push=pushed)[0]

            last = ps == parts[-1]  # the others are in flight: wait for this one here
            call = self.clients[ps].push_lookup_async(table, wanted, *pushed, now=last)
            sent.append((ps, Sent(self, self.version, call.then(lambda a: a[1]), resend)))
        return sent

    def push_rows(self, table: str, split: RowSplit, grads: Floats) -> list[Sent[int]]:
        """Send the gradients of ``split.unique`` rows to their PS; the calls in flight (a
        part a PS refuses for a PS-set change goes to its new owners)."""
        return [
            self._push_part(table, split.ids[ps], grads[split.positions[ps]], ps)
            for ps in range(self.num_ps)
            if split.ids[ps].size
        ]

    def _push_part(
        self, table: str, ids: npt.NDArray[np.int64], grads: Floats, ps: int
    ) -> Sent[int]:
        def resend() -> int:  # ``ids`` are unique and sorted: their split keeps their order
            return sum(
                p.result() for p in self.push_rows(table, split_ids(ids, self.num_ps), grads)
            )

        return Sent(self, self.version, self.clients[ps].push_rows_async(table, ids, grads), resend)

    # ---- dense ----
    def push_dense(self, grads: Mapping[str, Floats]) -> list[tuple[int, Sent[int]]]:
        """Send each dense gradient to the PS that holds the tensor; (PS index, call in
        flight) pairs, each call answering that PS's new dense version (a part refused for a
        PS-set change goes to the tensors' new owners; it answers their newest version)."""
        by_ps: dict[int, dict[str, Floats]] = {}
        for name, grad in grads.items():
            by_ps.setdefault(self.dense_plan[name], {})[name] = grad

        def sent(ps: int, part: dict[str, Floats]) -> Sent[int]:
            def resend() -> int:
                return max(call.result() for _, call in self.push_dense(part))

            pending = self.clients[ps].push_dense_async(part, self.dense_versions[ps])
            return Sent(self, self.version, pending, resend)

        return [(ps, sent(ps, part)) for ps, part in sorted(by_ps.items())]

    def pull_dense(self, everything: bool = False) -> dict[str, Floats]:
        """Dense tensors changed on their PS since this set last pulled them (``everything``:
        all of them; always after the set changed)."""
        return self._again(lambda: self._pull_dense(everything))

    def _pull_dense(self, everything: bool) -> dict[str, Floats]:
        params: dict[str, Floats] = {}
        for ps, client in enumerate(self.clients):
            if not any(owner == ps for owner in self.dense_plan.values()):
                continue
            version, got = client.pull_dense(-1 if everything else self.dense_versions[ps])
            self.dense_versions[ps] = version
            params.update(got)
        return params

    def stats(self) -> list[PsStats]:
        return [c.stats() for c in self.clients]
