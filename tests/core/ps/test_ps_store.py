"""What one PS holds: lazy rows, duplicate ids summed, bad input named, rows re-partitioned."""

import numpy as np
import pytest

from flexjob.api.errors import InvalidSpecError, NotFoundError
from flexjob.core.ps.initializer import initial_rows, table_seed
from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec
from flexjob.core.ps.parameters import ModelSpec, PsStore
from flexjob.core.ps.partition import row_owners
from flexjob.core.ps.table import EmbeddingTable, TableSpec

SGD = OptimizerSpec(OptimizerKind.SGD, lr=0.5)


def ids(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_rows_are_created_on_first_lookup_with_their_seeded_values() -> None:
    table = EmbeddingTable(TableSpec("user", 4, num_rows=10**9, seed=3), SGD)
    got = table.lookup(ids(10**9 - 1, 5, 5))
    assert table.num_rows == 2
    expected = initial_rows(ids(10**9 - 1, 5), 4, table_seed(3, "user"), 0.01)
    np.testing.assert_array_equal(got, expected[[0, 1, 1]])
    assert table.nbytes == 2 * (4 * 4 + 8)


def test_duplicate_ids_in_one_push_are_summed() -> None:
    table = EmbeddingTable(TableSpec("t", 2, init_scale=0.0), SGD)
    grads = np.array([[1, 0], [2, 0], [0, 4]], dtype=np.float32)
    assert table.push(ids(7, 7, 9), grads) == 2
    np.testing.assert_allclose(table.lookup(ids(7, 9)), [[-1.5, 0.0], [0.0, -2.0]])


def test_adam_rows_keep_their_own_step_counts() -> None:
    adam = OptimizerSpec(OptimizerKind.ADAM, lr=0.1)
    table = EmbeddingTable(TableSpec("t", 1, init_scale=0.0), adam)
    one = np.ones((1, 1), dtype=np.float32)
    table.push(ids(1), one)
    table.push(ids(1), one)
    table.push(ids(2), one)
    # Adam's first step moves by lr whatever the gradient: row 2 had one step of its own.
    np.testing.assert_allclose(table.lookup(ids(2)), [[-0.1]], atol=1e-6)


def test_bad_ids_and_grads_name_the_field() -> None:
    table = EmbeddingTable(TableSpec("item", 3, num_rows=100), SGD)
    with pytest.raises(
        InvalidSpecError, match=r"ids: id 100 out of range \[0, 100\) of table 'item'"
    ):
        table.lookup(ids(1, 100))
    with pytest.raises(InvalidSpecError, match="ids: id -1 out of range"):
        table.lookup(ids(-1))
    with pytest.raises(InvalidSpecError, match="ids: must be a 1-d int64 array, got int32"):
        table.lookup(np.array([1], dtype=np.int32))
    with pytest.raises(InvalidSpecError, match=r"grads: shape \[2, 2\] does not match ids x dim"):
        table.push(ids(1, 2), np.zeros((2, 2), dtype=np.float32))
    assert table.num_rows == 0  # nothing was created by the bad calls


def test_table_spec_names_bad_fields() -> None:
    with pytest.raises(InvalidSpecError, match=r"tables\[t\].dim must be >= 1"):
        TableSpec("t", 0)
    with pytest.raises(InvalidSpecError, match="num_rows must be >= 0"):
        TableSpec("t", 2, num_rows=-1)


def test_export_then_load_into_a_larger_ps_set_keeps_every_row_once() -> None:
    adam = OptimizerSpec(OptimizerKind.ADAM, lr=0.01)
    spec = TableSpec("t", 4, seed=1)
    rng = np.random.default_rng(0)
    old = [EmbeddingTable(spec, adam) for _ in range(2)]
    all_ids = rng.integers(0, 10**6, size=3000).astype(np.int64)
    for ps, table in enumerate(old):
        mine = np.unique(all_ids[row_owners(all_ids, 2) == ps])
        table.push(mine, rng.normal(size=(mine.size, 4)).astype(np.float32))
    exports = [t.export() for t in old]
    new = [EmbeddingTable(spec, adam) for _ in range(3)]
    for ps, table in enumerate(new):
        for ex in exports:
            keep = row_owners(ex.ids, 3) == ps
            table.load(
                type(ex)(
                    ex.ids[keep],
                    ex.rows[keep],
                    {k: v[keep] for k, v in ex.slots.items()},
                    ex.steps[keep],
                )
            )
    assert sum(t.num_rows for t in new) == sum(t.num_rows for t in old)
    before = sum(float(e.rows.sum()) for e in exports)
    after = sum(float(t.export().rows.sum()) for t in new)
    assert after == pytest.approx(before, rel=1e-6)
    probe = exports[0].ids[:5]
    owner = row_owners(probe, 3)
    for i, row_id in enumerate(probe.tolist()):
        np.testing.assert_array_equal(new[owner[i]].lookup(ids(row_id)), old[0].lookup(ids(row_id)))


def _model(dense_shape: tuple[int, ...] = (2, 3), dim: int = 4) -> ModelSpec:
    return ModelSpec(SGD, (TableSpec("t", dim),), {"w": np.ones(dense_shape, dtype=np.float32)})


def test_first_configure_wins_and_later_ones_must_agree() -> None:
    store = PsStore()
    assert store.configure(_model()) is True
    assert store.configure(_model()) is False
    with pytest.raises(InvalidSpecError, match=r"tables\[t\]"):
        store.configure(_model(dim=8))
    with pytest.raises(InvalidSpecError, match="optimizer"):
        store.configure(ModelSpec(OptimizerSpec(lr=1.0), _model().tables, _model().dense))


def test_dense_push_updates_and_bumps_the_version() -> None:
    store = PsStore()
    store.configure(_model())
    assert store.push_dense({"w": np.full((2, 3), 2.0, dtype=np.float32)}) == 1
    np.testing.assert_allclose(store.dense["w"], np.zeros((2, 3)))


def test_bad_dense_push_changes_nothing_and_names_the_field() -> None:
    store = PsStore()
    store.configure(_model())
    with pytest.raises(NotFoundError, match="grads: unknown dense parameter 'b'"):
        store.push_dense({"w": np.ones((2, 3), dtype=np.float32), "b": np.ones(1)})
    with pytest.raises(InvalidSpecError, match=r"grads\[w\]: shape \[3, 2\]"):
        store.push_dense({"w": np.ones((3, 2), dtype=np.float32)})
    assert store.version == 0
    np.testing.assert_array_equal(store.dense["w"], np.ones((2, 3)))
    with pytest.raises(NotFoundError, match="table: unknown table 'x'; this PS holds"):
        store.table("x")


def test_unconfigured_store_says_configure_first() -> None:
    with pytest.raises(InvalidSpecError, match="call Configure first"):
        PsStore().push_dense({})


def test_dirty_rows_count_the_rows_pushed_since_a_checkpoint_copied_them() -> None:
    table = EmbeddingTable(TableSpec("t", 4), SGD)
    table.lookup(ids(*range(100)))  # created, never pushed: nothing to lose
    assert table.dirty_rows == 0
    table.push(ids(1, 2, 3, 3), np.ones((4, 4), dtype=np.float32))
    table.push(ids(3, 200), np.ones((2, 4), dtype=np.float32))  # 200: a new row, pushed
    assert table.dirty_rows == 4
    out = table.empty_export(table.num_rows)
    table.export_into(out, 0, 3)  # a checkpoint's copy of slots 0..2 (ids 0, 1, 2)
    assert table.dirty_rows == 2
    table.export_into(out, 3, table.num_rows)
    assert table.dirty_rows == 0
    table.push(ids(2), np.ones((1, 4), dtype=np.float32))
    assert table.dirty_rows == 1
    restored = EmbeddingTable(TableSpec("t", 4), SGD)
    restored.load(table.export())
    assert restored.dirty_rows == 0
