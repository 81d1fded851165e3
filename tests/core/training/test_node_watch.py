"""The master's node-watch rule: which replica snapshots mean gone, and which pending too long."""

import dataclasses
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flexjob.api import ReplicaPhase, ReplicaType
from flexjob.core.planner.oom import mentions_oom
from flexjob.core.replicas import OOM_KILLED, Replica
from flexjob.core.training.node_watch import (
    NodeWatchKind,
    NodeWatchState,
    exit_reason,
    observe,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def replica(
    index: int = 1,
    phase: ReplicaPhase = ReplicaPhase.RUNNING,
    uid: str = "",
    rtype: ReplicaType = ReplicaType.WORKER,
    **changes: object,
) -> Replica:
    r = Replica(
        namespace="ns",
        job="j",
        name=f"j-{rtype.value}-{index}",
        type=rtype,
        index=index,
        phase=phase,
        uid=uid or f"uid-{rtype.value}-{index}",
        created=T0,
    )
    return dataclasses.replace(r, **changes)  # type: ignore[arg-type]


def run(*snapshots: list[Replica], timeout: float | None = 60.0, at: datetime = T0) -> list:
    state, events = NodeWatchState(), []
    for snap in snapshots:
        state, found = observe(state, snap, at, timeout)
        events.extend(found)
    return events


def test_an_oom_killed_replica_is_gone_with_a_reason_the_oom_rule_matches() -> None:
    dead = replica(1, ReplicaPhase.FAILED, exit_code=137, reason=OOM_KILLED)
    [ev] = run([replica(0), replica(1)], [replica(0), dead])
    assert (ev.kind, ev.node_id, ev.replica_type, ev.replica_index) == (
        NodeWatchKind.GONE,
        "worker-1",
        ReplicaType.WORKER,
        1,
    )
    assert ev.reason == "replica worker-1 OOMKilled (exit code 137)"
    assert ev.exit_code == 137
    assert mentions_oom(ev.reason)


def test_a_failed_replica_is_reported_once() -> None:
    dead = replica(1, ReplicaPhase.FAILED, exit_code=1, message="Traceback\nValueError: bad")
    events = run([replica(1)], [dead], [dead], [dead])
    assert [e.reason for e in events] == ["replica worker-1 Failed (exit code 1): ValueError: bad"]


def test_a_replica_that_vanishes_while_active_is_gone() -> None:
    [ev] = run([replica(0), replica(1)], [replica(0)])
    assert (ev.kind, ev.node_id, ev.reason) == (
        NodeWatchKind.GONE,
        "worker-1",
        "replica worker-1 deleted",
    )


def test_a_replica_being_deleted_is_gone_once_not_again_when_it_vanishes() -> None:
    evicted = replica(1, deleting=True)
    events = run([replica(1)], [evicted], [])
    assert [(e.kind, e.reason) for e in events] == [
        (NodeWatchKind.GONE, "replica worker-1 deleted")
    ]


def test_succeeded_replicas_are_finished_not_gone() -> None:
    done = replica(1, ReplicaPhase.SUCCEEDED, exit_code=0)
    assert run([replica(1)], [done], []) == []


def test_not_gone_while_a_newer_incarnation_runs_under_the_same_node_id() -> None:
    old = replica(1, ReplicaPhase.FAILED, uid="a", exit_code=1)
    new = replica(1, uid="b")
    assert run([replica(1, uid="a")], [old, new]) == []
    # A new incarnation still Pending has no agent yet: the old one is reported.
    [ev] = run([replica(1, uid="a")], [old, replica(1, ReplicaPhase.PENDING, uid="b")])
    assert ev.kind is NodeWatchKind.GONE


def test_the_job_master_is_not_watched() -> None:
    master = replica(0, rtype=ReplicaType.MASTER)
    dead = dataclasses.replace(master, phase=ReplicaPhase.FAILED, exit_code=1)
    assert run([master], [dead], []) == []


def test_pending_too_long_is_reported_once_per_incarnation() -> None:
    pending = replica(2, ReplicaPhase.PENDING)
    early = T0 + timedelta(seconds=59)
    late = T0 + timedelta(seconds=61)
    state, found = observe(NodeWatchState(), [pending], early, 60.0)
    assert found == []
    state, found = observe(state, [pending], late, 60.0)
    assert [(e.kind, e.node_id, e.reason) for e in found] == [
        (NodeWatchKind.PENDING_TOO_LONG, "worker-2", "replica worker-2 pending for 61 s")
    ]
    state, found = observe(state, [pending], late + timedelta(seconds=30), 60.0)
    assert found == []
    again = replica(2, ReplicaPhase.PENDING, uid="other")
    _, found = observe(state, [again], late + timedelta(seconds=30), 60.0)
    # The first incarnation vanished (gone); the second has been pending as long.
    assert [e.kind for e in found] == [NodeWatchKind.PENDING_TOO_LONG, NodeWatchKind.GONE]


@pytest.mark.parametrize("timeout", [None, 0.0])
def test_no_pending_timeout_reports_no_pending_replica(timeout: float | None) -> None:
    pending = replica(2, ReplicaPhase.PENDING)
    assert run([pending], timeout=timeout, at=T0 + timedelta(days=1)) == []


def test_exit_reason_without_code_or_message() -> None:
    assert exit_reason(replica(3, ReplicaPhase.FAILED)) == "replica worker-3 Failed"


PHASES = st.sampled_from(list(ReplicaPhase))


@given(
    st.lists(
        st.lists(
            st.tuples(st.integers(0, 2), st.integers(0, 1), PHASES, st.booleans()), max_size=4
        ),
        max_size=6,
    )
)
def test_each_incarnation_is_reported_gone_at_most_once(
    snapshots: list[list[tuple[int, int, ReplicaPhase, bool]]],
) -> None:
    listed = [
        list(
            {
                (i, inc): replica(i, phase, uid=f"{i}-{inc}", deleting=deleting)
                for i, inc, phase, deleting in snap
            }.values()
        )
        for snap in snapshots
    ]
    events = run(*listed)
    gone = Counter(e.node_id for e in events if e.kind is NodeWatchKind.GONE)
    for node_id, count in gone.items():
        assert count <= len({r.uid for snap in listed for r in snap if r.short_name == node_id})
