"""The PS row index agrees with a plain dict on every id, through growth and any int64 id."""

import numpy as np

from flexjob.core.ps.row_index import RowIndex


def test_slots_match_a_dict_through_many_batches_and_rehashes() -> None:
    rng = np.random.default_rng(0)
    index, model = RowIndex(), dict[int, int]()
    extremes = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0], dtype=np.int64)
    batches = [extremes] + [
        np.concatenate(
            [
                rng.integers(-(2**62), 2**62, size=300),  # anywhere in int64
                rng.zipf(1.2, size=2000) - 1,  # small, heavily duplicated ids
                (rng.integers(0, 50, size=200) << 40),  # same low bits: colliding homes
            ]
        ).astype(np.int64)
        for _ in range(30)
    ]
    for ids in batches:
        slots, added = index.slots_of(ids)
        new = sorted(set(ids.tolist()) - model.keys())
        assert added.tolist() == new  # the ids never seen, ascending
        base = len(model)
        model.update((i, base + k) for k, i in enumerate(new))
        assert slots.tolist() == [model[i] for i in ids.tolist()]
    assert len(index) == len(model) > 20_000  # grew through several rehashes
    everything = np.array(sorted(model), dtype=np.int64)
    np.testing.assert_array_equal(index.find(everything), [model[i] for i in everything])


def test_find_answers_minus_one_for_ids_never_added() -> None:
    index = RowIndex()
    index.add(np.array([5, 7, -3], dtype=np.int64))
    got = index.find(np.array([7, 6, -3, 5, 2**40], dtype=np.int64))
    assert got.tolist() == [1, -1, 2, 0, -1]
    assert len(index) == 3
