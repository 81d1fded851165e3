import pytest

from flexjob.core.training.rendezvous import NodeStatus, Rendezvous, RendezvousConfig
from tests.core.clock import FakeClock


def rdzv(
    lo: int = 2, hi: int = 4, unit: int = 1, last_call: float = 5.0
) -> tuple[Rendezvous, FakeClock]:
    clock = FakeClock()
    return Rendezvous(RendezvousConfig(lo, hi, unit, last_call), prefix="job", clock=clock), clock


def test_round_completes_at_once_when_max_nodes_joined() -> None:
    r, _ = rdzv(hi=3)
    assert [r.join(n) for n in ("a", "b")] == [1, 1]
    assert r.join("c") == 1
    assert r.world is not None and r.world.members == ("a", "b", "c") and r.round == 1


def test_round_waits_for_the_last_call_timeout_with_min_nodes() -> None:
    r, clock = rdzv(lo=2, hi=4, last_call=5)
    r.join("a")
    r.join("b")
    clock.advance(4.9)
    assert r.tick() is None
    clock.advance(0.2)
    world = r.tick()
    assert world is not None and world.members == ("a", "b")


def test_no_round_below_min_nodes_however_long_it_waits() -> None:
    r, clock = rdzv(lo=3)
    r.join("a")
    r.join("b")
    clock.advance(100)
    assert r.tick() is None and r.round == 0


def test_world_is_rounded_down_to_the_node_unit() -> None:
    r, clock = rdzv(lo=2, hi=8, unit=2)
    for n in "abcde":
        r.join(n)
    clock.advance(6)
    world = r.tick()
    assert world is not None and world.members == ("a", "b", "c", "d")
    assert r.status("e") is NodeStatus.WAITING


def test_ranks_follow_join_age_so_the_oldest_survivor_is_rank_zero() -> None:
    r, clock = rdzv(lo=2, hi=3)
    for n in ("a", "b", "c"):
        r.join(n)
    r.remove("a")
    r.join("c")  # survivors re-join, youngest first
    r.join("b")
    clock.advance(6)
    world = r.tick() or r.world  # every live member is back: the round may complete at once
    assert world is not None and world.members == ("b", "c") and world.rank_of("b") == 0


def test_a_member_death_breaks_the_world_and_asks_survivors_to_rejoin() -> None:
    r, _ = rdzv(lo=2, hi=3)
    for n in ("a", "b", "c"):
        r.join(n)
    assert r.num_nodes_waiting() == 0
    r.remove("b")
    assert r.num_nodes_waiting() >= 1


def test_a_new_node_waiting_asks_running_members_to_rejoin() -> None:
    r, clock = rdzv(lo=2, hi=3)
    r.join("a")
    r.join("b")
    clock.advance(6)
    r.tick()
    r.join("c")
    assert r.num_nodes_waiting() == 1


def test_a_waiting_node_that_cannot_grow_the_world_is_not_announced() -> None:
    r, _ = rdzv(lo=2, hi=2)
    r.join("a")
    r.join("b")
    r.join("c")
    assert r.round == 1 and r.num_nodes_waiting() == 0


def test_each_round_has_a_new_number_and_store_prefix() -> None:
    r, _ = rdzv(lo=1, hi=1)
    r.join("a")
    first = r.world
    r.join("a")
    second = r.world
    assert first is not None and second is not None
    assert (first.round, second.round) == (1, 2)
    assert first.store_prefix == "job/round-1/" and second.store_prefix == "job/round-2/"


def test_view_of_a_waiting_node_is_incomplete_with_no_rank() -> None:
    r, _ = rdzv(lo=2)
    r.join("a")
    view = r.view("a")
    assert (view.complete, view.rank, view.round) == (False, -1, 1)


def test_restore_keeps_the_round_number_and_ranks() -> None:
    r, _ = rdzv(lo=2, hi=2)
    r.join("a")
    r.join("b")
    state = r.to_dict()
    again, _ = rdzv(lo=2, hi=2)
    again.restore(state["round"], state["members"], state["ages"])  # type: ignore[arg-type]
    assert again.view("b").rank == 1 and again.round == 1
    again.join("a")
    again.join("b")
    assert again.round == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_nodes": 0, "max_nodes": 1}, "min_nodes must be >= 1"),
        ({"min_nodes": 3, "max_nodes": 2}, "max_nodes must be >= min_nodes"),
        ({"min_nodes": 1, "max_nodes": 2, "node_unit": 3}, "node_unit must be between"),
    ],
)
def test_bad_bounds_are_rejected_naming_the_field(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RendezvousConfig(**kwargs)


def test_broken_world_completes_once_every_live_member_rejoined() -> None:
    r, _clock = rdzv(lo=1, hi=3)
    for n in ("a", "b", "c"):
        r.join(n)
    r.remove("c")  # c died; a and b re-join
    r.join("a")
    r.join("b")  # no last-call wait: nobody else can come back
    assert r.world is not None and r.world.members == ("a", "b")


def test_waiting_node_does_not_form_a_second_world_beside_a_running_one() -> None:
    r, clock = rdzv(lo=1, hi=2)
    r.join("a")
    clock.advance(6)
    r.tick()
    assert r.world is not None and r.world.members == ("a",)
    r.join("late")
    clock.advance(6)
    assert r.tick() is None and r.num_nodes_waiting() == 1  # a must re-join first
    r.join("a")
    assert r.world.members == ("a", "late")
