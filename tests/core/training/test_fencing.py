"""The fencing rule: a node declared dead while it may be alive has every call refused, of the
node and of its processes, until its agent joins again with incarnation 0; a call carrying an
older incarnation than the node's current one is refused for good; nodes the master does not
know are never refused. Checked over every short sequence of heartbeats and deaths."""

import itertools
import json

import pytest

from flexjob.api.errors import NODE_FENCED
from flexjob.core.training.fencing import (
    NO_INCARNATION,
    Admission,
    Memberships,
    admission,
    declared_dead,
    fenced_message,
    heartbeat,
)

ADMITTED, FENCED, PEER = Admission.ADMITTED, Admission.FENCED, Admission.PEER_REPORT


def member(m: Memberships, node: str, incarnation: int = NO_INCARNATION) -> tuple[Memberships, int]:
    got = heartbeat(m, node, incarnation)
    assert not got.fenced
    return got.state, got.incarnation


def test_a_first_heartbeat_joins_as_a_new_member_with_a_fresh_incarnation() -> None:
    m, a = member(Memberships(), "a")
    m, b = member(m, "b")
    assert a >= 1 and b > a
    assert heartbeat(m, "a", a).incarnation == a  # its heartbeats keep it


def test_a_node_declared_dead_is_refused_for_itself_and_its_processes() -> None:
    m, inc = member(Memberships(), "w-1")
    m = declared_dead(m, "w-1")
    for caller, carried in itertools.product(("w-1", "w-1.1", "w-1.7"), (0, inc, inc + 5)):
        assert admission(m, caller, carried) is FENCED, (caller, carried)
    assert heartbeat(m, "w-1", inc).fenced
    assert admission(m, "w-10", 0) is ADMITTED  # another node, not its process


def test_its_agent_rejoining_with_incarnation_0_is_a_new_member_and_the_old_one_stays_fenced() -> (
    None
):
    m, old = member(Memberships(), "a")
    m = declared_dead(m, "a")
    m, new = member(m, "a")
    assert new > old
    assert admission(m, "a", new) is ADMITTED
    assert admission(m, "a.1", NO_INCARNATION) is ADMITTED  # its fresh processes
    assert admission(m, "a", old) is FENCED
    assert admission(m, "a.1", old) is FENCED
    assert heartbeat(m, "a", old).fenced


def test_a_peers_report_for_a_fenced_node_is_taken_but_is_no_sign_of_its_life() -> None:
    """A survivor reports a shard the fenced node finished in a committed step (incarnation
    0: the survivor's client); the fenced node's own report, carrying its incarnation, is not."""
    m, inc = member(Memberships(), "w-1")
    m = declared_dead(m, "w-1")
    assert admission(m, "w-1.1", 0, peer_report=True) is Admission.PEER_REPORT
    assert admission(m, "w-1", inc, peer_report=True) is FENCED
    assert admission(m, "w-1", 0) is FENCED  # any other call of its processes


def test_a_node_without_a_membership_is_never_fenced() -> None:
    m = declared_dead(Memberships(), "trainer-proc")
    assert m == Memberships()
    assert admission(m, "trainer-proc", 0) is ADMITTED


def test_a_master_that_forgot_its_members_adopts_the_incarnation_a_node_carries() -> None:
    got = heartbeat(Memberships(), "a", 7)
    assert not got.fenced and got.incarnation == 7
    m, fresh = member(got.state, "b")
    assert fresh > 7  # never one a node may still carry
    m = declared_dead(m, "a")
    m, again = member(m, "a")
    assert again > 7


def test_a_heartbeat_that_changes_nothing_answers_the_same_state() -> None:
    """(The master saves its memberships when they change: not on every heartbeat.)"""
    m, inc = member(Memberships(), "a")
    assert heartbeat(m, "a", inc).state is m
    assert heartbeat(m, "a", NO_INCARNATION).state is not m


def test_saved_memberships_read_back_the_fenced_and_the_live() -> None:
    m, old = member(Memberships(), "a")
    m, b = member(m, "b")
    m = declared_dead(m, "a")
    saved = m.to_dict()
    assert saved == {"current": {"b": b}, "fenced": {"a": old}, "last": b}
    back = Memberships.from_dict(json.loads(json.dumps(saved)))
    assert admission(back, "a.1", old) is FENCED and admission(back, "b", b) is ADMITTED
    assert member(back, "a")[1] > b  # a new member's incarnation was never given before


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"current": {"a": 0}}, "members.current"),
        ({"current": ["a"]}, "members.current"),
        ({"fenced": {"a": "2"}}, "members.fenced"),
        ({"current": {"a": 3}, "last": 2}, "members.last"),
        ({"last": "9"}, "members.last"),
    ],
)
def test_malformed_saved_memberships_are_refused_naming_the_field(
    data: dict[str, object], field: str
) -> None:
    with pytest.raises(ValueError, match=field):
        Memberships.from_dict(data)


def test_the_refusal_names_the_node_and_says_what_to_do() -> None:
    text = fenced_message("worker-1", 3)
    assert text.startswith(NODE_FENCED)
    assert "worker-1" in text and "incarnation 3" in text and "join again" in text


STEPS = ("beat0", "beat_current", "beat_stale", "dead")


@pytest.mark.parametrize("steps", list(itertools.product(STEPS, repeat=4)))
def test_every_short_history_refuses_exactly_the_stale_and_the_fenced(
    steps: tuple[str, ...],
) -> None:
    """Against a model: a node's call is taken iff the node is not fenced now and the call's
    incarnation is 0 or the current one; incarnations only grow."""
    m = Memberships()
    seen: list[int] = []  # every incarnation given, in order
    fenced = False
    for step in steps:
        current = seen[-1] if seen and not fenced else None
        if step == "beat0":
            got = heartbeat(m, "n", 0)
            assert not got.fenced and (not seen or got.incarnation > max(seen))
            seen.append(got.incarnation)
            m, fenced = got.state, False
        elif step == "beat_current" and current is not None:
            got = heartbeat(m, "n", current)
            assert not got.fenced and got.incarnation == current
            m = got.state
        elif step == "beat_stale" and len(seen) > 1:
            assert heartbeat(m, "n", seen[0]).fenced
        elif step == "dead":
            m = declared_dead(m, "n")
            fenced = fenced or bool(seen)
        saved = Memberships.from_dict(json.loads(json.dumps(m.to_dict())))
        assert saved == m, steps  # a master restarted from its snapshot answers the same
        live = seen[-1] if seen and not fenced else None
        for carried in {0, *seen}:
            want = not fenced and (carried == 0 or carried == live)
            for caller in ("n", "n.1"):
                assert (admission(m, caller, carried) is ADMITTED) == want, (steps, carried)
                peer = admission(m, caller, carried, peer_report=True)
                assert peer is (ADMITTED if want else FENCED if not fenced or carried else PEER)
