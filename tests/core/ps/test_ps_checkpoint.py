"""PS partitions snapshotted and restored into PS sets of any size: every row lands on exactly
one new PS with its values, optimizer slots and step count; dense tensors follow the new plan;
incomplete or mixed snapshot sets are refused by name."""

import numpy as np
import pytest

from flexjob.api.errors import InvalidSpecError
from flexjob.core.ps.checkpoint import PsSnapshot, check_complete, restore, snapshot
from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec
from flexjob.core.ps.parameters import ModelSpec, PsStore
from flexjob.core.ps.partition import assign_dense, row_owners, split_ids
from flexjob.core.ps.table import RowsExport, TableSpec

ADAM = OptimizerSpec(OptimizerKind.ADAM, lr=0.05)
TABLES = (TableSpec("user", 4, init_scale=0.1), TableSpec("item", 3, num_rows=5000, seed=2))
DENSE = {
    "w1": np.arange(12, dtype=np.float32).reshape(3, 4),
    "w2": np.ones(7, dtype=np.float32),
    "b": np.zeros(1, dtype=np.float32),
}


def trained_set(num_ps: int, seed: int = 0) -> list[PsStore]:
    """A PS set after a few rounds of pushes, partitioned the way ``PsSet`` does it."""
    rng = np.random.default_rng(seed)
    plan = assign_dense({k: v.size for k, v in DENSE.items()}, num_ps)
    stores = []
    for ps in range(num_ps):
        store = PsStore()
        mine = {k: v for k, v in DENSE.items() if plan[k] == ps}
        store.configure(ModelSpec(ADAM, TABLES, mine))
        stores.append(store)
    for _ in range(4):
        for spec in TABLES:
            ids = rng.integers(0, 5000, size=300).astype(np.int64)
            split = split_ids(ids, num_ps)
            for ps in range(num_ps):
                if split.ids[ps].size:
                    grads = rng.normal(size=(split.ids[ps].size, spec.dim)).astype(np.float32)
                    stores[ps].tables[spec.name].push(split.ids[ps], grads)
        for store in stores:
            grads = {k: rng.normal(size=v.shape).astype(np.float32) for k, v in store.dense.items()}
            if grads:
                store.push_dense(grads)
    return stores


def rows_by_id(stores: list[PsStore], table: str) -> dict[int, tuple[bytes, ...]]:
    """Every row of ``table`` over a set: id → (value, slots, step) bytes; asserts no id twice."""
    out: dict[int, tuple[bytes, ...]] = {}
    for store in stores:
        e = store.tables[table].export()
        for i, row_id in enumerate(e.ids.tolist()):
            assert row_id not in out, f"row {row_id} of {table} on two PS"
            slots = tuple(e.slots[k][i].tobytes() for k in sorted(e.slots))
            out[row_id] = (e.rows[i].tobytes(), *slots, e.steps[i].tobytes())
    return out


@pytest.mark.parametrize(("old", "new"), [(o, n) for o in (1, 2, 3) for n in (1, 2, 3, 4)])
def test_every_row_survives_a_resize_exactly_once_with_its_optimizer_state(
    old: int, new: int
) -> None:
    before = trained_set(old)
    snaps = [snapshot(s, i, old) for i, s in enumerate(before)]
    after = [PsStore() for _ in range(new)]
    loaded = [restore(s, snaps, i, new) for i, s in enumerate(after)]

    assert sum(loaded) == sum(s.num_rows for s in snaps)
    for spec in TABLES:
        rows_before, rows_after = rows_by_id(before, spec.name), rows_by_id(after, spec.name)
        assert rows_after == rows_before
        total = sum(s.tables[spec.name].export().rows.sum(dtype=np.float64) for s in before)
        again = sum(s.tables[spec.name].export().rows.sum(dtype=np.float64) for s in after)
        assert again == total  # the row-sum invariant
        for ps, store in enumerate(after):
            held = store.tables[spec.name].export().ids
            assert (row_owners(held, new) == ps).all()
    plan = assign_dense({k: v.size for k, v in DENSE.items()}, new)
    old_dense = {k: (s, v) for s in before for k, v in s.dense.items()}
    for ps, store in enumerate(after):
        assert sorted(store.dense) == sorted(k for k, p in plan.items() if p == ps)
        for name, value in store.dense.items():
            src, src_value = old_dense[name]
            np.testing.assert_array_equal(value, src_value)
            for slot, v in src.dense_slots[name].items():
                np.testing.assert_array_equal(store.dense_slots[name][slot], v)
            np.testing.assert_array_equal(store.dense_steps[name], src.dense_steps[name])
        assert store.version == max(s.version for s in before)


def test_a_restored_partition_keeps_training_like_the_one_it_replaces() -> None:
    (original,) = trained_set(1)
    restored = PsStore()
    restore(restored, [snapshot(original, 0, 1)], 0, 1)
    ids = np.arange(0, 5000, 7, dtype=np.int64)
    grads = np.full((ids.size, 4), 0.3, dtype=np.float32)
    for store in (original, restored):
        store.tables["user"].push(ids, grads)
        store.push_dense({"w2": np.full(7, 0.5, dtype=np.float32)})
    np.testing.assert_array_equal(
        original.tables["user"].lookup(ids), restored.tables["user"].lookup(ids)
    )
    np.testing.assert_array_equal(original.dense["w2"], restored.dense["w2"])


def test_a_snapshot_does_not_change_with_later_pushes() -> None:
    (store,) = trained_set(1)
    snap = snapshot(store, 0, 1)
    rows = snap.rows["user"].rows.copy()
    w2 = snap.dense["w2"].value.copy()
    store.tables["user"].push(snap.rows["user"].ids, np.ones_like(rows))
    store.push_dense({"w2": np.ones(7, dtype=np.float32)})
    np.testing.assert_array_equal(snap.rows["user"].rows, rows)
    np.testing.assert_array_equal(snap.dense["w2"].value, w2)


def test_an_unconfigured_ps_has_nothing_to_snapshot() -> None:
    with pytest.raises(InvalidSpecError, match="no model yet"):
        snapshot(PsStore(), 0, 1)


def _snaps(num_ps: int) -> list[PsSnapshot]:
    return [snapshot(s, i, num_ps) for i, s in enumerate(trained_set(num_ps))]


def test_incomplete_or_mixed_snapshot_sets_are_refused() -> None:
    two, three = _snaps(2), _snaps(3)
    with pytest.raises(InvalidSpecError, match="none given"):
        check_complete([])
    with pytest.raises(InvalidSpecError, match=r"PS indexes \[0\], expected 0 .. 1"):
        restore(PsStore(), two[:1], 0, 2)
    with pytest.raises(InvalidSpecError, match=r"different sizes \[2, 3\]"):
        check_complete([*two, three[2]])
    with pytest.raises(InvalidSpecError, match=r"index: 2 must be in \[0, 2\)"):
        restore(PsStore(), two, 2, 2)
    assert check_complete(three) == 3


def test_rows_with_a_duplicate_id_are_refused_by_an_empty_table() -> None:
    store = PsStore()
    store.configure(ModelSpec(ADAM, TABLES, {}))
    table = store.tables["user"]
    ids = np.array([5, 9, 5], dtype=np.int64)
    rows = np.zeros((3, 4), dtype=np.float32)
    slots = {k: rows.copy() for k in ADAM.slot_names}
    with pytest.raises(InvalidSpecError, match="duplicate ids in rows loaded into 'user'"):
        table.load(RowsExport(ids, rows, slots, np.zeros(3, dtype=np.int64)))
    assert table.num_rows == 0
