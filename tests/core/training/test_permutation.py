"""The seeded shuffle of a range dataset: a bijection of [0, n), reproducible from its key,
and as uniform as a shuffle (checked by chi-square over many keys)."""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flexjob.core.training.permutation import SeededPermutation


@settings(max_examples=150, deadline=None)
@given(size=st.integers(1, 3000), key=st.text(max_size=12))
def test_every_index_appears_exactly_once(size: int, key: str) -> None:
    perm = SeededPermutation(size, key)
    assert sorted(perm.slice(0, size)) == list(range(size))


def test_every_index_appears_exactly_once_for_every_small_size() -> None:
    for size in range(1, 513):
        assert sorted(SeededPermutation(size, "flexjob:0:0").slice(0, size)) == list(range(size))


@settings(max_examples=100, deadline=None)
@given(size=st.integers(1, 10**8), position=st.integers(0, 10**8 - 1), key=st.text(max_size=8))
def test_a_position_maps_into_the_range_the_same_way_every_time(
    size: int, position: int, key: str
) -> None:
    position %= size
    value = SeededPermutation(size, key)[position]
    assert 0 <= value < size
    assert SeededPermutation(size, key)[position] == value


def test_different_keys_give_different_orders() -> None:
    orders = {SeededPermutation(100, f"flexjob:0:{epoch}").slice(0, 100) for epoch in range(50)}
    assert len(orders) == 50


@pytest.mark.parametrize(
    ("size", "position"), [(5, 0), (5, 4), (33, 16), (1000, 0), (1000, 999), (10**8, 0)]
)
def test_the_value_at_a_position_is_uniform_over_keys(size: int, position: int) -> None:
    keys, buckets = 4000, size if size <= 40 else 20  # 20 divides the larger sizes
    counts = Counter(
        SeededPermutation(size, f"k{i}")[position] * buckets // size for i in range(keys)
    )
    expected = keys / buckets
    chi2 = sum((counts.get(b, 0) - expected) ** 2 / expected for b in range(buckets))
    assert chi2 / (buckets - 1) < 2.5  # ~1 for a uniform draw; 4 rounds on 5 gave 27


def test_an_order_has_no_trend_from_position_to_value() -> None:
    size = 20_000
    order = SeededPermutation(size, "flexjob:7:0").slice(0, size)
    ascents = sum(order[i + 1] > order[i] for i in range(size - 1)) / (size - 1)
    assert 0.48 < ascents < 0.52
    fixed_points = sum(order[i] == i for i in range(size))
    assert fixed_points < 10


def test_a_position_outside_the_range_is_refused() -> None:
    with pytest.raises(IndexError, match=r"outside 0\.\.9"):
        SeededPermutation(10, "k")[10]
