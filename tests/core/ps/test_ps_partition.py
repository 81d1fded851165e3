"""PS partitioning: dense by name balanced by size, rows by a stable hash, re-hash moves."""

import numpy as np
import pytest

from flexjob.core.ps.initializer import initial_rows, table_seed
from flexjob.core.ps.partition import assign_dense, rehash_moves, row_owners, split_ids


def test_row_owner_is_stable_across_calls_and_known_values() -> None:
    ids = np.arange(10, dtype=np.int64)
    first = row_owners(ids, 3)
    assert np.array_equal(first, row_owners(ids.copy(), 3))
    # Pinned: a change of hash would silently re-partition every stored checkpoint.
    assert row_owners(np.array([0, 1, 2, 12345678901], dtype=np.int64), 7).tolist() == [
        2,
        2,
        4,
        3,
    ]
    assert first.min() >= 0 and first.max() < 3


def test_row_owners_spread_zipf_like_ids_evenly() -> None:
    ids = np.arange(200_000, dtype=np.int64) * 16  # strided ids must not collide on one PS
    counts = np.bincount(row_owners(ids, 4), minlength=4)
    assert counts.min() > 0.95 * counts.mean()


def test_negative_and_huge_ids_are_owned() -> None:
    ids = np.array([-1, -(2**62), 2**62, 10**12], dtype=np.int64)
    owners = row_owners(ids, 5)
    assert ((owners >= 0) & (owners < 5)).all()


def test_zero_ps_is_rejected() -> None:
    with pytest.raises(ValueError, match="num_ps"):
        row_owners(np.array([1], dtype=np.int64), 0)
    with pytest.raises(ValueError, match="num_ps"):
        assign_dense({"w": 1}, 0)


def test_split_ids_dedups_and_groups_by_owner() -> None:
    ids = np.array([5, 3, 5, 9, 3, 3, 100], dtype=np.int64)
    split = split_ids(ids, 2)
    assert split.unique.tolist() == [3, 5, 9, 100]
    assert np.array_equal(split.unique[split.inverse], ids)
    owners = row_owners(split.unique, 2)
    for ps in range(2):
        assert np.array_equal(split.unique[split.positions[ps]], split.ids[ps])
        assert (owners[split.positions[ps]] == ps).all()
    assert sum(len(p) for p in split.ids) == 4


def test_dense_assignment_balances_sizes_and_is_deterministic() -> None:
    sizes = {"a": 100, "b": 60, "c": 50, "d": 10, "e": 10}
    plan = assign_dense(sizes, 2)
    load = [sum(s for n, s in sizes.items() if plan[n] == ps) for ps in range(2)]
    assert sorted(load) == [110, 120]
    assert plan == assign_dense(dict(reversed(sizes.items())), 2)
    assert set(assign_dense(sizes, 1).values()) == {0}


def test_more_ps_than_tensors_leaves_some_empty() -> None:
    assert sorted(assign_dense({"a": 5, "b": 5}, 4).values()) == [0, 1]


def test_rehash_moves_every_row_to_exactly_one_new_owner() -> None:
    ids = np.arange(50_000, dtype=np.int64)
    old, new = rehash_moves(ids, 2, 3)
    assert np.array_equal(old, row_owners(ids, 2))
    assert np.array_equal(new, row_owners(ids, 3))
    # The union of "rows whose new owner is p", taken from every old partition, is all rows.
    gathered = np.concatenate([ids[(old == o) & (new == p)] for p in range(3) for o in range(2)])
    assert np.array_equal(np.sort(gathered), ids)


def test_initial_rows_depend_only_on_seed_table_and_id() -> None:
    seed = table_seed(7, "user")
    a = initial_rows(np.array([1, 2, 3], dtype=np.int64), 8, seed, 0.05)
    b = initial_rows(np.array([3, 1], dtype=np.int64), 8, seed, 0.05)
    assert a.dtype == np.float32 and a.shape == (3, 8)
    assert np.array_equal(a[[2, 0]], b)
    assert np.abs(a).max() <= 0.05 and np.abs(a).max() > 0.01
    other = initial_rows(np.array([1], dtype=np.int64), 8, table_seed(7, "item"), 0.05)
    assert not np.array_equal(a[0], other[0])
    assert not np.array_equal(a[0], a[1])


def test_initial_rows_of_a_huge_table_cost_only_the_rows_asked_for() -> None:
    rows = initial_rows(np.array([10**7 - 1, 10**9], dtype=np.int64), 16, 1, 0.1)
    assert rows.shape == (2, 16)
    assert initial_rows(np.array([4], dtype=np.int64), 4, 1, 0.0).tolist() == [[0.0] * 4]


def test_initial_rows_are_roughly_uniform() -> None:
    rows = initial_rows(np.arange(20_000, dtype=np.int64), 4, 3, 1.0)
    assert abs(float(rows.mean())) < 0.02
    assert abs(float(rows.var()) - 1 / 3) < 0.02
