import pytest

from flexjob.api import ReplicaType
from flexjob.api.errors import NotFoundError, UnavailableError
from flexjob.core.planner import EventKind, OptimizeStage
from flexjob.rpc import brain_messages as schemas
from flexjob.rpc.brain_client import BrainClient
from tests.brain import recorded, reports
from tests.brain.conftest import TestClient

KNEE = recorded.load("throughput_knee")
OOM = recorded.load("oom")
HOT = recorded.load("hot_ps")
SPEED = recorded.speed_samples(KNEE)


def _register(brain: BrainClient, info: schemas.JobInfoMessage) -> None:
    brain.persist_metrics(info.name, schemas.MetricsReport(job=info))


def _follow_plans(brain: BrainClient, job: str, rounds: int) -> list[int]:
    """The worker counts a one-worker ``job`` runs at when it follows up to ``rounds`` plans,
    reporting the recorded speed of each count it runs at."""
    sizes = [1]
    for _ in range(rounds):
        measured = [s for s in SPEED if s.world_size == sizes[-1]]
        brain.persist_metrics(job, schemas.MetricsReport(speed_samples=reports.speed(measured)))
        plan = brain.optimize(job, OptimizeStage.RUNNING)
        if plan.empty:
            break
        sizes.append(plan.replica_resources[ReplicaType.WORKER].replicas)
    return sizes


def _run_to_completion(brain: BrainClient, job: str, status: schemas.JobStatus) -> None:
    brain.persist_metrics(job, schemas.MetricsReport(status=status))


def test_first_plan_copies_a_similar_finished_job(brain: BrainClient) -> None:
    old = reports.job_info("old", workers=3, user="ann", model="bert", dataset="wiki")
    _register(brain, old)
    _run_to_completion(brain, "old", schemas.JobStatus.SUCCEEDED)
    _register(brain, reports.job_info("new", user="ann", model="bert", dataset="wiki"))
    detail = brain.optimize_detail("new", OptimizeStage.CREATE)
    assert detail.plan.replica_resources[ReplicaType.WORKER].replicas == 3
    assert [e.kind for e in detail.events] == [EventKind.JOB_START]
    assert detail.events[0].algorithm == "initial-from-similar-jobs"


def test_first_plan_without_history_is_the_jobs_own_request(brain: BrainClient) -> None:
    _register(brain, reports.job_info("new", workers=2, model="gpt"))
    plan = brain.optimize("new", OptimizeStage.CREATE)
    assert plan.replica_resources[ReplicaType.WORKER].replicas == 2
    assert plan.reason == "default resources"


def test_asking_for_the_first_plan_again_repeats_it(brain: BrainClient) -> None:
    _register(brain, reports.job_info("new", workers=2))
    first = brain.optimize_detail("new", OptimizeStage.CREATE)
    again = brain.optimize_detail("new", OptimizeStage.CREATE)
    assert again.plan_id == first.plan_id and again.plan == first.plan
    assert len(brain.get_job_metrics("new").plans) == 1


def test_job_grows_along_the_recorded_curve_and_stops_at_the_knee(brain: BrainClient) -> None:
    """The job follows each plan; the brain sees the speed at each size and ends at the knee."""
    _register(
        brain, reports.job_info("job", workers=1, limits=schemas.JobLimitsMessage(max_replicas=8))
    )
    assert _follow_plans(brain, "job", 8) == [1, 2, 3, 4, 5, KNEE["knee"]]
    assert brain.optimize("job", OptimizeStage.RUNNING).empty


def test_plan_history_is_kept_in_order(brain: BrainClient) -> None:
    _register(brain, reports.job_info("job", workers=1))
    brain.optimize("job", OptimizeStage.CREATE)
    speed = [s for s in SPEED if s.world_size == 1]
    brain.persist_metrics("job", schemas.MetricsReport(speed_samples=reports.speed(speed)))
    brain.optimize("job", OptimizeStage.RUNNING)
    plans = brain.get_job_metrics("job").plans
    assert [p.stage for p in plans] == [OptimizeStage.CREATE, OptimizeStage.RUNNING]
    assert plans[1].plan.replica_resources[ReplicaType.WORKER].replicas == 2


def test_oom_is_answered_once_with_more_memory(brain: BrainClient) -> None:
    info = reports.job_info("job", workers=2, limits=schemas.JobLimitsMessage(max_memory_mb=8192))
    _register(brain, info)
    report = schemas.MetricsReport(
        node_samples=reports.node_samples(OOM["node_samples"]),
        node_events=reports.node_events(OOM["node_events"]),
    )
    brain.persist_metrics("job", report)
    detail = brain.optimize_detail("job", OptimizeStage.RUNNING)
    assert detail.plan.node_resources["worker-1"].memory == 6144
    assert [(e.kind, e.algorithm) for e in detail.events] == [(EventKind.OOM, "oom-memory")]
    assert brain.optimize("job", OptimizeStage.RUNNING).empty


def test_an_oom_reported_before_the_initial_plan_is_still_answered(brain: BrainClient) -> None:
    _register(brain, reports.job_info("job", workers=2))
    report = schemas.MetricsReport(node_events=reports.node_events(OOM["node_events"]))
    brain.persist_metrics("job", report)
    brain.optimize("job", OptimizeStage.CREATE)
    assert "worker-1" in brain.optimize("job", OptimizeStage.RUNNING).node_resources


def test_hot_ps_gets_more_cpu(brain: BrainClient) -> None:
    info = reports.job_info("job", limits=schemas.JobLimitsMessage(max_cpu=4.0, max_ps=4))
    info.resources[ReplicaType.PS] = schemas.ReplicaResourcesMessage(
        replicas=2, cpu=2.0, memory_mb=4096
    )
    _register(brain, info)
    report = schemas.MetricsReport(node_samples=reports.node_samples(HOT["node_samples"]))
    brain.persist_metrics("job", report)
    plan = brain.optimize("job", OptimizeStage.RUNNING)
    assert plan.node_resources["ps-0"].cpu == 3.0
    assert "ps-1" not in plan.node_resources


def test_optimize_for_an_unknown_job_raises_unknown_job(brain: BrainClient) -> None:
    with pytest.raises(NotFoundError, match="unknown job"):
        brain.optimize("nope", OptimizeStage.RUNNING)


def test_bad_report_is_refused_naming_the_field(http: TestClient) -> None:
    r = http.post(
        "/api/v1/jobs/j/metrics",
        json={"job": {"name": "j"}, "speedSamples": [{"timestamp": 1, "step": -1}]},
    )
    assert r.status_code == 422
    fields = {e["field"] for e in r.json()["errors"]}
    assert {"speedSamples[0].step", "speedSamples[0].samplesPerSecond"} <= fields
    assert "speedSamples[0].step: " in r.json()["detail"]


def test_bad_stage_lists_the_allowed_stages(http: TestClient) -> None:
    r = http.post("/api/v1/jobs/j/optimize", json={"stage": "later"})
    assert r.status_code == 422
    assert "stage: Input should be 'create' or 'running'" in r.json()["detail"]


def test_job_names_with_slashes_work(brain: BrainClient) -> None:
    _register(brain, reports.job_info("team/job"))
    assert brain.list_jobs() == ["team/job"]
    assert brain.get_job_metrics("team/job").job.name == "team/job"


def test_unreachable_brain_is_reported_as_unhealthy() -> None:
    client = BrainClient("http://127.0.0.1:9", timeout=0.5)
    assert client.healthy() is False
    with pytest.raises(UnavailableError, match="unreachable"):
        client.list_jobs()


def test_a_master_of_before_the_rename_sends_min_and_max_workers_and_is_planned_within_them(
    http: TestClient, brain: BrainClient
) -> None:
    """``minWorkers``/``maxWorkers`` on the wire (the names before ``minReplicas``): read as the
    training type's bounds, which the throughput plan then stays within."""
    job = {**reports.job_info("old").to_wire(), "limits": {"minWorkers": 1, "maxWorkers": 2}}
    assert http.post("/api/v1/jobs/old/metrics", json={"job": job}).status_code == 204
    limits = brain.get_job_metrics("old").job.limits
    assert (limits.min_replicas, limits.max_replicas) == (1, 2)
    assert _follow_plans(brain, "old", 4) == [1, 2]  # the knee is at 4: held at maxWorkers
