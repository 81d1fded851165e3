"""The lease policy: fixed, or adaptive from one shard, doubling while leases are used up
quickly, halving while they last long, within 1..cap."""

import pytest

from flexjob.core.training.lease_size import ADAPTIVE_LEASE_CAP, LeasePolicy


def test_adaptive_starts_at_one_and_doubles_up_to_the_cap_while_leases_go_fast() -> None:
    policy = LeasePolicy()
    sizes = [policy.first]
    for _ in range(8):
        sizes.append(policy.next(sizes[-1], used_up_s=0.01))
    assert sizes == [1, 2, 4, 8, 16, 32, 32, 32, 32]
    assert ADAPTIVE_LEASE_CAP == 32


def test_a_lease_that_lasts_long_halves_the_next_down_to_one() -> None:
    policy = LeasePolicy(hold_s=1.0)
    assert policy.next(16, used_up_s=2.5) == 8
    assert policy.next(1, used_up_s=100.0) == 1


def test_a_lease_that_lasts_about_the_target_keeps_its_size() -> None:
    policy = LeasePolicy(hold_s=1.0)
    assert [policy.next(8, s) for s in (0.5, 1.0, 2.0)] == [8, 8, 8]
    assert policy.next(8, 0.49) == 16 and policy.next(8, 2.01) == 4


def test_fixed_never_changes() -> None:
    policy = LeasePolicy(fixed=8)
    assert policy.first == 8
    assert policy.next(8, 0.0) == 8 and policy.next(8, 1e6) == 8


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fixed": 0}, r"fixed lease must be in 1\.\.1024, got 0"),
        ({"cap": 2000}, r"lease cap must be in 1\.\.1024, got 2000"),
        ({"hold_s": 0.0}, r"hold_s must be > 0, got 0\.0"),
    ],
)
def test_bad_settings_name_the_field_and_the_range(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeasePolicy(**kwargs)  # type: ignore[arg-type]
