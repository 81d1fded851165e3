from flexjob.api import ReplicaType
from flexjob.core.planner import (
    EventKind,
    HotPsConfig,
    JobLimits,
    OptimizeEvent,
    OptimizeStage,
    detect_events,
    execute,
    plan_hot_ps,
)
from flexjob.core.planner.hot_ps import hot_ps_nodes
from tests.brain import recorded

DATA = recorded.load("hot_ps")


def test_only_the_ps_above_ninety_percent_is_hot() -> None:
    assert hot_ps_nodes(recorded.node_samples(DATA), HotPsConfig()) == DATA["hot"]


def test_a_busy_worker_is_never_a_hot_ps() -> None:
    events = detect_events(recorded.job_stats(DATA), OptimizeStage.RUNNING)
    assert [e.node for e in events if e.kind is EventKind.HOT_PS] == ["ps-0"]


def test_a_hot_ps_gets_more_cpu_up_to_the_cap() -> None:
    plan = execute(OptimizeEvent(EventKind.HOT_PS, "ps-0"), recorded.job_stats(DATA)).plan
    assert plan.node_resources["ps-0"].cpu == 3.0


def test_a_hot_ps_at_the_cpu_cap_gets_a_new_ps() -> None:
    action = plan_hot_ps("ps-0", 4.0, 2, JobLimits(max_cpu=4.0, max_ps=4))
    assert action is not None and action.new_ps_count == 3 and action.new_cpu is None


def test_no_plan_when_both_cpu_and_ps_count_are_capped() -> None:
    assert plan_hot_ps("ps-0", 4.0, 4, JobLimits(max_cpu=4.0, max_ps=4)) is None


def test_new_ps_plan_sets_the_ps_replica_count() -> None:
    stats = recorded.job_stats({**DATA, "limits": {"max_cpu": 2.0, "max_ps": 4}})
    plan = execute(OptimizeEvent(EventKind.HOT_PS, "ps-0"), stats).plan
    assert plan.replica_resources[ReplicaType.PS].replicas == 3
