"""One embedding table's rows on one PS: created lazily, updated per row by the optimizer.

Rows live in a growing slab (``capacity x dim`` float32, doubled when full) found through a
``RowIndex`` (id → slot, vectorised over a batch), so memory grows with the rows actually
touched, never with ``num_rows``.
A new row starts at ``initializer.initial_rows`` for its id. ``push`` sums the gradients of
duplicate ids in one batch, then applies the optimizer once per distinct row.
``export`` / ``load`` move rows (values, optimizer slots, step counts) between partitions —
the unit a checkpoint stores and a re-partitioned PS set loads (issue 15). Pure: no I/O, no
locking (the PS shell serialises calls per table).
"""

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from flexjob.api.errors import InvalidSpecError
from flexjob.core.ps.initializer import FloatArray, initial_rows, table_seed
from flexjob.core.ps.optim import OptimizerSpec, StepArray, apply
from flexjob.core.ps.partition import IdArray
from flexjob.core.ps.row_index import RowIndex

_MIN_CAPACITY = 1024


@dataclass(frozen=True, slots=True)
class TableSpec:
    """An embedding table: ``dim`` floats per row; ids in ``[0, num_rows)`` (0: any int64)."""

    name: str
    dim: int
    num_rows: int = 0
    init_scale: float = 0.01
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.name:
            raise InvalidSpecError("tables[].name must not be empty")
        if self.dim < 1:
            raise InvalidSpecError(f"tables[{self.name}].dim must be >= 1, got {self.dim}")
        if self.num_rows < 0:
            raise InvalidSpecError(
                f"tables[{self.name}].num_rows must be >= 0 (0: unbounded), got {self.num_rows}"
            )
        if self.init_scale < 0:
            raise InvalidSpecError(
                f"tables[{self.name}].init_scale must be >= 0, got {self.init_scale}"
            )


@dataclass(frozen=True, slots=True)
class RowsExport:
    """Rows of one table leaving a partition: ids, values, optimizer slots, per-row steps."""

    ids: IdArray
    rows: FloatArray
    slots: dict[str, FloatArray]
    steps: StepArray


class EmbeddingTable:
    def __init__(self, spec: TableSpec, optimizer: OptimizerSpec) -> None:
        self.spec = spec
        self.optimizer = optimizer
        self._seed = table_seed(spec.seed, spec.name)
        self._index = RowIndex()
        self._ids = np.empty(0, dtype=np.int64)  # slot → id, so export copies slabs only
        self._rows = np.empty((0, spec.dim), dtype=np.float32)
        self._slots = {n: np.empty((0, spec.dim), dtype=np.float32) for n in optimizer.slot_names}
        self._steps = np.empty(0, dtype=np.int64)

    @property
    def num_rows(self) -> int:
        """Rows created so far."""
        return len(self._index)

    @property
    def nbytes(self) -> int:
        """Bytes of the rows, slots and step counts created so far."""
        per_row = self.spec.dim * 4 * (1 + len(self._slots)) + 8
        return self.num_rows * per_row

    def lookup(self, ids: IdArray) -> FloatArray:
        """The rows of ``ids`` (``len(ids) x dim``), creating the ones never seen."""
        where = self._slots_of(self._checked(ids))  # may grow the slab: index it after
        return self._rows[where]

    def push(self, ids: IdArray, grads: FloatArray) -> int:
        """Apply ``grads`` (one row per id; duplicates summed); returns rows updated."""
        ids = self._checked(ids)
        expected = (ids.size, self.spec.dim)
        if grads.shape != expected:
            raise InvalidSpecError(
                f"grads: shape {list(grads.shape)} does not match ids x dim {list(expected)} "
                f"of table {self.spec.name!r}"
            )
        if ids.size > 1 and bool((ids[1:] > ids[:-1]).all()):
            unique = ids  # already sorted and distinct (what ``PsSet`` sends)
        else:
            unique, inverse = np.unique(ids, return_inverse=True)
            summed = np.zeros((unique.size, self.spec.dim), dtype=np.float32)
            np.add.at(summed, inverse, grads)
            grads = summed
        where = self._slots_of(unique)
        self._steps[where] += 1
        params = self._rows[where]
        slots = {n: s[where] for n, s in self._slots.items()}
        apply(self.optimizer, params, grads, slots, self._steps[where])
        self._rows[where] = params
        for name, values in slots.items():
            self._slots[name][where] = values
        return int(unique.size)

    def push_lookup(
        self, push_ids: IdArray, grads: FloatArray, lookup_ids: IdArray
    ) -> tuple[int, FloatArray]:
        """``push`` then ``lookup`` (one training step's round trip); both parts are checked
        before either runs, so bad input changes nothing."""
        self._checked(lookup_ids)
        updated = self.push(push_ids, grads) if push_ids.size else 0
        return updated, self.lookup(lookup_ids)

    def export(self) -> RowsExport:
        """Every row created so far, in slot order: contiguous copies of the slabs' filled
        part, so a checkpoint's in-memory copy costs one memcpy per array."""
        n = self.num_rows
        return RowsExport(
            self._ids[:n].copy(),
            self._rows[:n].copy(),
            {k: v[:n].copy() for k, v in self._slots.items()},
            self._steps[:n].copy(),
        )

    def empty_export(self, n: int) -> RowsExport:
        """Arrays for ``n`` exported rows, already written once (so the pages exist and a
        later ``export_into`` under the PS's lock is a plain memory copy)."""
        dim = self.spec.dim
        out = RowsExport(
            np.zeros(n, dtype=np.int64),
            np.zeros((n, dim), dtype=np.float32),
            {k: np.zeros((n, dim), dtype=np.float32) for k in self._slots},
            np.zeros(n, dtype=np.int64),
        )
        out.ids.fill(0)
        out.steps.fill(0)
        for a in (out.rows, *out.slots.values()):
            a.fill(0)
        return out

    def export_into(self, out: RowsExport, start: int, end: int) -> None:
        """Copy the rows in slots ``[start, end)`` into the same slots of ``out``."""
        out.ids[start:end] = self._ids[start:end]
        out.rows[start:end] = self._rows[start:end]
        out.steps[start:end] = self._steps[start:end]
        for k, v in self._slots.items():
            out.slots[k][start:end] = v[start:end]

    def load(self, rows: RowsExport) -> None:
        """Take ``rows`` (from another partition's ``export``) as they are. Into an empty
        table (a PS restoring) the slabs are filled directly, with no initial values made."""
        ids = self._checked(rows.ids)
        if not len(self._index) and ids.size:
            ordered = np.sort(ids)  # a sort finds duplicates ~20x faster than np.unique here
            if bool((ordered[1:] == ordered[:-1]).any()):
                raise InvalidSpecError(f"ids: duplicate ids in rows loaded into {self.spec.name!r}")
            self._grow(ids.size)
            self._index.add(ids)
            n = ids.size
            self._ids[:n] = ids
            self._rows[:n] = rows.rows
            self._steps[:n] = rows.steps
            for name, values in rows.slots.items():
                self._slots[name][:n] = values
            return
        where = self._slots_of(ids)
        self._rows[where] = rows.rows
        self._steps[where] = rows.steps
        for name, values in rows.slots.items():
            self._slots[name][where] = values

    def _checked(self, ids: npt.ArrayLike) -> IdArray:
        arr = np.asarray(ids)
        if arr.dtype != np.int64 or arr.ndim != 1:
            raise InvalidSpecError(
                f"ids: must be a 1-d int64 array, got {arr.dtype} with shape {list(arr.shape)}"
            )
        bound = self.spec.num_rows
        if bound and arr.size and (int(arr.min()) < 0 or int(arr.max()) >= bound):
            bad = arr[(arr < 0) | (arr >= bound)][0]
            raise InvalidSpecError(
                f"ids: id {int(bad)} out of range [0, {bound}) of table {self.spec.name!r}"
            )
        return arr

    def _slots_of(self, ids: IdArray) -> npt.NDArray[np.intp]:
        start = len(self._index)
        where, new_ids = self._index.slots_of(ids)
        if new_ids.size:
            end = start + new_ids.size
            self._grow(end)
            self._ids[start:end] = new_ids
            self._rows[start:end] = initial_rows(
                new_ids, self.spec.dim, self._seed, self.spec.init_scale
            )
            for name, values in self._slots.items():
                values[start:end] = self.optimizer.initial_slot(name)
            self._steps[start:end] = 0
        return where

    def _grow(self, needed: int) -> None:
        capacity = self._rows.shape[0]
        if needed <= capacity:
            return
        new_cap = max(_MIN_CAPACITY, capacity * 2, needed)

        def grown(a: FloatArray) -> FloatArray:
            out = np.empty((new_cap, self.spec.dim), dtype=np.float32)
            out[:capacity] = a
            return out

        self._rows = grown(self._rows)
        self._slots = {k: grown(v) for k, v in self._slots.items()}
        steps = np.zeros(new_cap, dtype=np.int64)
        steps[:capacity] = self._steps
        self._steps = steps
        ids = np.zeros(new_cap, dtype=np.int64)
        ids[:capacity] = self._ids
        self._ids = ids
