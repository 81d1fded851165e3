"""A PS partition as a checkpoint holds it, and how any PS set takes its share back.

``snapshot`` copies one ``PsStore`` (optimizer, table specs, every row with its optimizer
slots and step count, dense parameters with theirs, the dense version) — the only part of a
checkpoint that blocks the PS. ``restore`` fills an empty store for PS ``index`` of a set of
``num_ps`` from the snapshots of a *whole* earlier set (of any size): it keeps the rows that
now hash to ``index`` (``partition.row_owners``) and the dense tensors ``assign_dense`` now
gives it, so a restarted PS (same size) and a re-partitioned set (issue 15) use one rule and
every row lands on exactly one new PS. Pure: no I/O (``flexjob.ps.checkpoint_io`` writes files).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from flexjob.api.errors import InvalidSpecError
from flexjob.core.ps.initializer import FloatArray
from flexjob.core.ps.optim import OptimizerSpec, StepArray
from flexjob.core.ps.parameters import ModelSpec, PsStore
from flexjob.core.ps.partition import assign_dense, row_owners
from flexjob.core.ps.table import RowsExport, TableSpec


@dataclass(frozen=True, slots=True)
class DenseExport:
    """One dense tensor leaving a partition: its value, optimizer slots and step count."""

    value: FloatArray
    slots: dict[str, FloatArray]
    steps: StepArray


@dataclass(frozen=True, slots=True)
class PsSnapshot:
    """Everything PS ``index`` of a set of ``num_ps`` held at dense ``version``."""

    index: int
    num_ps: int
    version: int
    optimizer: OptimizerSpec
    tables: tuple[TableSpec, ...]
    rows: dict[str, RowsExport]
    dense: dict[str, DenseExport]

    @property
    def num_rows(self) -> int:
        return sum(r.ids.size for r in self.rows.values())


def snapshot(
    store: PsStore, index: int, num_ps: int, rows: Mapping[str, RowsExport] | None = None
) -> PsSnapshot:
    """A copy of ``store`` that later pushes do not change (the caller holds its locks);
    ``rows``: the tables' rows, already copied by the caller (``EmbeddingTable.export_into``),
    else every table is exported here."""
    if store.optimizer is None:
        raise InvalidSpecError("model: this PS has no model yet; nothing to checkpoint")
    dense = {
        name: DenseExport(
            value.copy(),
            {k: v.copy() for k, v in store.dense_slots[name].items()},
            store.dense_steps[name].copy(),
        )
        for name, value in store.dense.items()
    }
    return PsSnapshot(
        index=index,
        num_ps=num_ps,
        version=store.version,
        optimizer=store.optimizer,
        tables=tuple(t.spec for t in store.tables.values()),
        rows=dict(rows) if rows is not None else {n: t.export() for n, t in store.tables.items()},
        dense=dense,
    )


def check_complete(snapshots: Sequence[PsSnapshot]) -> int:
    """The size of the set ``snapshots`` come from; ``InvalidSpecError`` unless they are
    exactly one snapshot per PS index of one set."""
    if not snapshots:
        raise InvalidSpecError("snapshots: none given")
    sizes = {s.num_ps for s in snapshots}
    if len(sizes) != 1:
        raise InvalidSpecError(f"snapshots: from PS sets of different sizes {sorted(sizes)}")
    (size,) = sizes
    indexes = sorted(s.index for s in snapshots)
    if indexes != list(range(size)):
        raise InvalidSpecError(f"snapshots: PS indexes {indexes}, expected 0 .. {size - 1}")
    return size


def restore(store: PsStore, snapshots: Sequence[PsSnapshot], index: int, num_ps: int) -> int:
    """Fill the empty ``store`` with PS ``index``'s share (of ``num_ps``) of a whole set's
    ``snapshots``; returns the rows loaded."""
    check_complete(snapshots)
    if not 0 <= index < num_ps:
        raise InvalidSpecError(f"index: {index} must be in [0, {num_ps})")
    first = snapshots[0]
    all_dense = dense_of(snapshots)
    sizes = {name: int(d.value.size) for name, d in all_dense.items()}
    plan = assign_dense(sizes, num_ps)
    mine = {name: d for name, d in all_dense.items() if plan[name] == index}
    store.configure(ModelSpec(first.optimizer, first.tables, {k: d.value for k, d in mine.items()}))
    for name, d in mine.items():
        store.dense_slots[name] = {k: v.copy() for k, v in d.slots.items()}
        store.dense_steps[name] = d.steps.copy()
    # The dense version a restored PS answers: the newest its tensors come from (a version
    # only orders one PS's pulls, so any value that does not go back for a worker works).
    store.version = max(s.version for s in snapshots)
    loaded = 0
    for spec in first.tables:
        parts = _rows_owned(snapshots, spec.name, index, num_ps)
        if parts:  # one load of all parts: an empty table takes them without a row-by-row walk
            store.tables[spec.name].load(_concatenated(parts))
            loaded += sum(p.ids.size for p in parts)
    return loaded


def _concatenated(parts: Sequence[RowsExport]) -> RowsExport:
    if len(parts) == 1:
        return parts[0]
    return RowsExport(
        np.concatenate([p.ids for p in parts]),
        np.concatenate([p.rows for p in parts]),
        {k: np.concatenate([p.slots[k] for p in parts]) for k in parts[0].slots},
        np.concatenate([p.steps for p in parts]),
    )


def _rows_owned(
    snapshots: Sequence[PsSnapshot], table: str, index: int, num_ps: int
) -> list[RowsExport]:
    parts = []
    for snap in snapshots:
        rows = snap.rows.get(table)
        if rows is None or rows.ids.size == 0:
            continue
        keep = np.flatnonzero(row_owners(rows.ids, num_ps) == index)
        if keep.size == rows.ids.size:  # the whole partition (a relaunched PS): no gather
            parts.append(rows)
        elif keep.size:
            parts.append(
                RowsExport(
                    rows.ids[keep],
                    rows.rows[keep],
                    {k: v[keep] for k, v in rows.slots.items()},
                    rows.steps[keep],
                )
            )
    return parts


def dense_of(snapshots: Sequence[PsSnapshot]) -> Mapping[str, DenseExport]:
    """Every dense tensor a whole set's snapshots hold, by name."""
    out: dict[str, DenseExport] = {}
    for snap in snapshots:
        out.update(snap.dense)
    return out
