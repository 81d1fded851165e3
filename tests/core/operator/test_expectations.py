"""What a pass counts as existing while its creates are in flight
(``core.operator.expectations``)."""

from flexjob.api import ReplicaPhase, ReplicaType
from flexjob.core.operator.actions import CreateReplica
from flexjob.core.operator.expectations import EXPECTATION_TTL, answered, counted, expect, settled
from flexjob.core.operator.reconcile import reconcile
from flexjob.core.replicas import Replica
from tests.core.operator.reconcile_sim import T0, make_job, rank0_service

JOB = make_job(master=False, workers=3)


def requests() -> list[CreateReplica]:
    actions = reconcile(JOB, [], T0, services=[rank0_service(JOB)]).actions
    return [a for a in actions if isinstance(a, CreateReplica)]


def pod(index: int, uid: str, phase: ReplicaPhase = ReplicaPhase.RUNNING) -> Replica:
    name = f"{JOB.name}-worker-{index}"
    return Replica(JOB.namespace, JOB.name, name, ReplicaType.WORKER, index, phase, uid=uid)


def test_an_expected_replica_counts_as_pending_so_no_pass_creates_it_again() -> None:
    creates = requests()
    assert len(creates) == 3
    expected = {a.request.name: expect(a.request, 10.0, run=1) for a in creates}
    replicas, still = counted([], expected, now=11.0)
    assert [(r.name, r.phase, r.uid) for r in replicas] == [
        (a.request.name, ReplicaPhase.PENDING, "") for a in creates
    ]
    assert still == expected
    assert not [a for a in reconcile(JOB, replicas, T0).actions if isinstance(a, CreateReplica)]


def test_an_observed_pod_stands_for_its_expectation_which_stays_until_answered() -> None:
    request = requests()[0].request
    expected = {request.name: expect(request, 0.0, run=1)}
    replicas, still = counted([pod(0, "u1")], expected, now=1.0)
    assert replicas == [pod(0, "u1")]  # the pod, not a placeholder beside it
    assert still == expected  # that pod may be another incarnation that goes away
    assert counted([], still, now=1.0)[0][0].uid == ""  # it went: the expectation holds
    assert answered(still, request.name, run=1) == {}


def test_a_dispatch_ending_clears_only_its_own_expectations() -> None:
    first, second = (a.request for a in requests()[:2])
    expected = {first.name: expect(first, 0.0, run=1), second.name: expect(second, 0.0, run=2)}
    assert settled(expected, [first.name, second.name], run=1) == {
        second.name: expected[second.name]
    }
    assert answered(expected, second.name, run=1) == expected  # run 1 did not send it


def test_an_expectation_expires_so_a_lost_answer_cannot_wedge_a_job() -> None:
    request = requests()[0].request
    expected = {request.name: expect(request, 0.0, run=1)}
    assert counted([], expected, now=EXPECTATION_TTL)[1] == expected
    replicas, still = counted([], expected, now=EXPECTATION_TTL + 1)
    assert (replicas, still) == ([], {})
