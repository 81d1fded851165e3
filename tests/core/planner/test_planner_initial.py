from flexjob.api import ReplicaType
from flexjob.core.planner import (
    EventKind,
    JobLimits,
    JobProfile,
    OptimizeStage,
    ReplicaResources,
    optimize,
    plan_initial,
)
from flexjob.core.planner.stats import JobStats
from tests.brain import recorded

HISTORY = recorded.finished_jobs(recorded.load("finished_jobs"))
DEFAULT = {ReplicaType.WORKER: ReplicaResources(1, 1.0, 1024)}


def test_initial_plan_copies_successful_jobs_of_the_same_user_model_and_dataset() -> None:
    plan, sources = plan_initial(
        JobProfile("new", "ann", "bert-base", "wiki"), DEFAULT, HISTORY, JobLimits()
    )
    assert sorted(sources) == ["bert-a-1", "bert-a-2"]
    assert plan[ReplicaType.WORKER] == ReplicaResources(5, 4.0, 7200)


def test_initial_plan_falls_back_to_the_same_model() -> None:
    plan, sources = plan_initial(
        JobProfile("new", "carl", "bert-base", "books"), DEFAULT, HISTORY, JobLimits()
    )
    assert sources == ["bert-b-1"]
    assert plan[ReplicaType.WORKER].replicas == 2


def test_initial_plan_without_similar_jobs_is_the_default() -> None:
    plan, sources = plan_initial(
        JobProfile("new", "ann", "gpt", "web"), DEFAULT, HISTORY, JobLimits()
    )
    assert sources == []
    assert plan == DEFAULT


def test_initial_plan_respects_the_job_limits() -> None:
    plan, _ = plan_initial(
        JobProfile("new", "ann", "bert-base", "wiki"),
        DEFAULT,
        HISTORY,
        JobLimits(max_replicas=3, max_memory_mb=4096),
    )
    assert plan[ReplicaType.WORKER] == ReplicaResources(3, 4.0, 4096)


def test_create_stage_raises_job_start_and_plans_from_history() -> None:
    stats = JobStats(JobProfile("new", "ann", "bert-base", "wiki"), JobLimits(), DEFAULT)
    plan, decisions = optimize(stats, OptimizeStage.CREATE, HISTORY)
    assert [d.event.kind for d in decisions] == [EventKind.JOB_START]
    assert decisions[0].algorithm == "initial-from-similar-jobs"
    assert plan.replica_resources[ReplicaType.WORKER].replicas == 5
    assert "bert-a-2" in plan.reason
