from dataclasses import replace

from flexjob.api import ReplicaType
from flexjob.core.planner import (
    EventKind,
    JobLimits,
    NodeEvent,
    NodeEventKind,
    OptimizeEvent,
    OptimizeStage,
    detect_events,
    execute,
    plan_oom_memory,
)
from tests.brain import recorded

DATA = recorded.load("oom")


def test_oom_memory_is_raised_by_half() -> None:
    assert plan_oom_memory(4096, None) == 6144


def test_oom_memory_is_capped_by_the_job_limit() -> None:
    assert plan_oom_memory(6144, 8192) == 8192


def test_oom_at_the_cap_gives_no_plan() -> None:
    assert plan_oom_memory(8192, 8192) is None


def test_recorded_oom_raises_memory_until_the_cap() -> None:
    stats = recorded.job_stats(DATA)
    got = []
    memory = DATA["node_events"][0]["memory_mb"]
    for _ in range(3):
        event = NodeEvent("worker-1", ReplicaType.WORKER, NodeEventKind.OOM, 9000.0, memory)
        stats_now = replace(stats, node_events=[event])
        plan = execute(OptimizeEvent(EventKind.OOM, "worker-1"), stats_now).plan
        if plan.empty:
            break
        memory = plan.node_resources["worker-1"].memory
        got.append(memory)
    assert got == DATA["expected_memory_mb"]


def test_oom_node_event_raises_an_oom_optimize_event() -> None:
    events = detect_events(recorded.job_stats(DATA), OptimizeStage.RUNNING)
    assert OptimizeEvent(EventKind.OOM, "worker-1", "worker-1 ran out of memory") in events


def test_oom_events_already_handled_are_not_raised_again() -> None:
    events = detect_events(recorded.job_stats(DATA), OptimizeStage.RUNNING, since=3050.0)
    assert all(e.kind is not EventKind.OOM for e in events)


def test_oom_plan_names_the_node_and_keeps_under_the_cap() -> None:
    stats = recorded.job_stats(DATA)
    plan = execute(OptimizeEvent(EventKind.OOM, "worker-1"), stats).plan
    assert plan.node_resources["worker-1"].memory == 6144
    assert JobLimits(**DATA["limits"]).max_memory_mb == 8192
