"""``PsSet``: a trainer's view of its job's parameter servers — every PS client, and the
partition plan that says which PS holds which dense tensor and which embedding row.

Rows of one batch are looked up and pushed on every PS of the set at once (gRPC futures);
dense tensors are sent to and pulled from the PS that ``core.ps.partition.assign_dense``
gives them. The addresses come from ``FLEXJOB_PS_ADDRESSES`` or, failing that, from the job
master (``FLEXJOB_MASTER``, ``FLEXJOB_NUM_PS``) where each ``flexjob ps`` registered.
Not for torch (``trainer.ps_torch`` builds modules on top of this).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from flexjob.api import names
from flexjob.core.ps.optim import OptimizerSpec
from flexjob.core.ps.partition import RowSplit, assign_dense, row_owners, split_ids
from flexjob.core.ps.store import ModelSpec
from flexjob.core.ps.table import TableSpec
from flexjob.rpc.client import MasterClient
from flexjob.rpc.ps_api import PsStats
from flexjob.rpc.ps_client import Pending, PsClient
from flexjob.rpc.ps_registry import resolve_ps

Floats = npt.NDArray[np.float32]


def ps_addresses_from_env(timeout: float = 120.0) -> list[str]:
    """The PS addresses this process should use: ``FLEXJOB_PS_ADDRESSES``, else the ones
    registered with the master at ``FLEXJOB_MASTER`` (``FLEXJOB_NUM_PS`` of them)."""
    given = os.environ.get(names.ENV_PS_ADDRESSES, "")
    if given:
        return [a for a in given.split(",") if a]
    master = os.environ.get(names.ENV_MASTER, "")
    num_ps = os.environ.get(names.ENV_NUM_PS, "")
    if not master or not num_ps.isdigit() or int(num_ps) < 1:
        raise RuntimeError(
            f"no PS set: set {names.ENV_PS_ADDRESSES}, or {names.ENV_MASTER} and "
            f"{names.ENV_NUM_PS} (the operator and `flexjob run --ps N` do)"
        )
    with MasterClient(master, f"ps-resolver-{os.getpid()}") as client:
        return resolve_ps(client, int(num_ps), timeout=timeout)


class PsSet:
    def __init__(self, addresses: Sequence[str], *, timeout: float = 30.0) -> None:
        if not addresses:
            raise ValueError("a PS set needs at least one address")
        self.addresses = tuple(addresses)
        self.clients = tuple(PsClient(a, timeout=timeout) for a in self.addresses)
        self.dense_plan: dict[str, int] = {}
        self.dense_versions = [-1] * len(self.clients)

    @classmethod
    def from_env(cls, timeout: float = 120.0) -> PsSet:
        return cls(ps_addresses_from_env(timeout))

    @property
    def num_ps(self) -> int:
        return len(self.clients)

    def close(self) -> None:
        for client in self.clients:
            client.close()

    def configure(
        self,
        optimizer: OptimizerSpec,
        tables: Sequence[TableSpec],
        dense: Mapping[str, Floats],
    ) -> bool:
        """Declare the model on every PS (each gets its dense share); ``True`` when this call
        created it somewhere (the first worker), ``False`` when every PS had it already."""
        self.dense_plan = assign_dense({k: int(v.size) for k, v in dense.items()}, self.num_ps)
        created = False
        for ps, client in enumerate(self.clients):
            mine = {k: v for k, v in dense.items() if self.dense_plan[k] == ps}
            _, made = client.configure(ModelSpec(optimizer, tuple(tables), mine), self.num_ps)
            created = created or made
        return created

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
        call to each PS, which applies them before its lookup: one round trip per PS."""
        split = split_ids(ids, self.num_ps)
        if push is None:
            pending = [
                (ps, self.clients[ps].lookup_async(table, split.ids[ps]))
                for ps in range(self.num_ps)
                if split.ids[ps].size
            ]
        else:
            pending = self._push_lookup(table, split, *push)
        rows: Floats | None = None
        for ps, call in pending:
            got = call.result()
            if rows is None:
                rows = np.empty((split.unique.size, got.shape[1]), dtype=np.float32)
            rows[split.positions[ps]] = got
        if rows is None:
            rows = np.empty((0, 0), dtype=np.float32)
        return rows, split

    def _push_lookup(
        self, table: str, split: RowSplit, push_ids: npt.NDArray[np.int64], grads: Floats
    ) -> list[tuple[int, Pending[Floats]]]:
        owners = row_owners(push_ids, self.num_ps)
        pending = []
        for ps in range(self.num_ps):
            mine = owners == ps
            if not (split.ids[ps].size or mine.any()):
                continue
            call = self.clients[ps].push_lookup_async(
                table, split.ids[ps], push_ids[mine], grads[mine]
            )
            pending.append((ps, call.then(lambda answer: answer[1])))
        return pending

    def push_rows(self, table: str, split: RowSplit, grads: Floats) -> list[Pending[int]]:
        """Send the gradients of ``split.unique`` rows to their PS; the calls in flight."""
        return [
            self.clients[ps].push_rows_async(table, split.ids[ps], grads[split.positions[ps]])
            for ps in range(self.num_ps)
            if split.ids[ps].size
        ]

    # ---- dense ----
    def push_dense(self, grads: Mapping[str, Floats]) -> list[tuple[int, Pending[int]]]:
        """Send each dense gradient to the PS that holds the tensor; (PS index, call in
        flight) pairs, each call answering that PS's new dense version."""
        by_ps: dict[int, dict[str, Floats]] = {}
        for name, grad in grads.items():
            by_ps.setdefault(self.dense_plan[name], {})[name] = grad
        return [
            (ps, self.clients[ps].push_dense_async(part, self.dense_versions[ps]))
            for ps, part in sorted(by_ps.items())
        ]

    def pull_dense(self, everything: bool = False) -> dict[str, Floats]:
        """Dense tensors changed on their PS since this set last pulled them (``everything``:
        all of them)."""
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
