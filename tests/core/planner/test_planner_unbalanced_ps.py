"""The unbalanced-PS algorithm: a PS serving more than 1.5x the set's mean requests/s (or,
with no requests, holding 1.5x the mean partition bytes) gets the set re-partitioned over one
more PS, up to the job's PS cap; balanced sets, workers and short histories are left alone."""

from flexjob.api import ReplicaType
from flexjob.core.planner import (
    EventKind,
    JobLimits,
    JobProfile,
    JobStats,
    NodeSample,
    OptimizeEvent,
    OptimizeStage,
    ReplicaResources,
    detect_events,
    execute,
)
from flexjob.core.planner.unbalanced_ps import find_imbalance, plan_rebalance


def samples(
    rates: dict[str, float], bytes_: dict[str, int] | None = None, n: int = 3
) -> list[NodeSample]:
    out = []
    for t in range(n):
        for node, rate in rates.items():
            rtype = ReplicaType.PS if node.startswith("ps") else ReplicaType.WORKER
            held = (bytes_ or {}).get(node, 0)
            out.append(NodeSample(node, rtype, 100.0 + t, 50.0, 100.0, None, None, rate, held))
    return out


def stats(node_samples: list[NodeSample], ps: int = 3, max_ps: int | None = 4) -> JobStats:
    return JobStats(
        profile=JobProfile("ctr"),
        limits=JobLimits(max_ps=max_ps),
        current={ReplicaType.PS: ReplicaResources(ps, 2.0, 1024.0)},
        node_samples=node_samples,
    )


def test_a_ps_above_one_and_a_half_times_the_mean_is_found() -> None:
    found = find_imbalance(samples({"ps-0": 900.0, "ps-1": 100.0, "ps-2": 100.0}))
    assert found is not None and found.node == "ps-0" and found.measure == "requests/s"
    assert found.load == 900.0 and round(found.mean) == 367


def test_a_balanced_set_workers_and_short_histories_are_left_alone() -> None:
    assert find_imbalance(samples({"ps-0": 140.0, "ps-1": 100.0, "ps-2": 100.0})) is None
    assert find_imbalance(samples({"ps-0": 100.0, "worker-0": 9000.0})) is None  # one PS only
    assert find_imbalance(samples({"ps-0": 900.0, "ps-1": 100.0}, n=2)) is None  # window 3


def test_with_no_requests_the_partition_bytes_decide() -> None:
    idle = samples({"ps-0": 0.0, "ps-1": 0.0}, {"ps-0": 100, "ps-1": 900})
    found = find_imbalance(idle)
    assert found is not None and found.node == "ps-1" and found.measure == "partition bytes"
    assert find_imbalance(samples({"ps-0": 0.0, "ps-1": 0.0})) is None  # nothing held yet


def test_the_event_plans_one_more_ps_up_to_the_cap() -> None:
    job = stats(samples({"ps-0": 900.0, "ps-1": 100.0, "ps-2": 100.0}))
    events = [e for e in detect_events(job, OptimizeStage.RUNNING) if e.node == "ps-0"]
    assert [e.kind for e in events] == [EventKind.UNBALANCED_PS]
    decision = execute(events[0], job)
    assert decision.algorithm == "unbalanced-ps-rehash"
    spec = decision.plan.replica_resources[ReplicaType.PS]
    assert spec.replicas == 4 and spec.resource.cpu == 2.0 and spec.resource.memory == 1024
    assert "re-partition over ps 3 -> 4" in decision.plan.reason
    capped = stats(job.node_samples, ps=4, max_ps=4)
    event = OptimizeEvent(EventKind.UNBALANCED_PS, "ps-0")
    assert not execute(event, capped).plan.replica_resources
    assert plan_rebalance(2, JobLimits()) == 3 and plan_rebalance(4, JobLimits(max_ps=4)) is None
