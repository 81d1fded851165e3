import pytest

from flexjob.api import ReplicaResourceSpec, ReplicaType, ResourcePlan, ResourceSpec
from flexjob.api.errors import NotFoundError
from flexjob.brain.stats_store import BrainStore, job_stats
from flexjob.core import planner
from flexjob.core.planner import OptimizeStage, ReplicaResources, apply_plans
from flexjob.rpc import brain_messages as schemas
from tests.brain import recorded, reports
from tests.brain.conftest import Clock

KNEE = recorded.load("throughput_knee")
OOM = recorded.load("oom")


def test_reported_samples_read_back_in_order(store: BrainStore) -> None:
    samples = reports.speed(recorded.speed_samples(KNEE))
    store.persist("job-a", schemas.MetricsReport(job=reports.job_info(), speed_samples=samples))
    assert store.metrics("job-a").speed_samples == samples


def test_node_samples_keep_their_node_and_limits(store: BrainStore) -> None:
    ns = reports.node_samples(OOM["node_samples"])
    store.persist("job-a", schemas.MetricsReport(job=reports.job_info(), node_samples=ns))
    assert store.metrics("job-a").node_samples == ns


def test_a_ps_load_reaches_the_brains_unbalanced_ps_algorithm(store: BrainStore) -> None:
    ns = [
        schemas.NodeSampleMessage(
            node=f"ps-{i}",
            replica_type=ReplicaType.PS,
            timestamp=100.0 + t,
            cpu_percent=50.0,
            memory_mb=100.0,
            requests_per_second=900.0 if i == 0 else 100.0,
            partition_bytes=4096 * (i + 1),
        )
        for t in range(3)
        for i in range(3)
    ]
    store.persist("job-a", schemas.MetricsReport(job=reports.job_info(), node_samples=ns))
    assert store.metrics("job-a").node_samples == ns  # requests/s and bytes kept
    stats = job_stats(store.metrics("job-a"))
    events = planner.detect_events(stats, OptimizeStage.RUNNING)
    assert [(e.kind, e.node) for e in events] == [(planner.EventKind.UNBALANCED_PS, "ps-0")]


def test_node_events_are_stored(store: BrainStore) -> None:
    ev = reports.node_events(OOM["node_events"])
    store.persist("job-a", schemas.MetricsReport(job=reports.job_info(), node_events=ev))
    assert store.metrics("job-a").node_events == ev


def test_metrics_of_a_job_never_reported_is_an_error(store: BrainStore) -> None:
    with pytest.raises(NotFoundError, match="unknown job 'nope'"):
        store.metrics("nope")


def test_samples_for_an_unregistered_job_are_refused(store: BrainStore) -> None:
    with pytest.raises(NotFoundError):
        store.persist("nope", schemas.MetricsReport())


def test_job_record_must_name_the_same_job(store: BrainStore) -> None:
    with pytest.raises(ValueError, match=r"job\.name"):
        store.persist("job-b", schemas.MetricsReport(job=reports.job_info("job-a")))


def test_finished_job_is_history_with_its_peak_memory(store: BrainStore, clock: Clock) -> None:
    ns = reports.node_samples(OOM["node_samples"])
    store.persist(
        "job-a",
        schemas.MetricsReport(
            job=reports.job_info(model="bert"), node_samples=ns, status=schemas.JobStatus.SUCCEEDED
        ),
    )
    store.persist("job-b", schemas.MetricsReport(job=reports.job_info("job-b", model="bert")))
    [finished] = store.finished_jobs(like=reports.job_info("job-b", model="bert").profile())
    assert finished.profile.name == "job-a" and finished.succeeded
    assert finished.finished_at == clock.now
    assert finished.peak_memory_mb[ReplicaType.WORKER] == max(s.memory_mb for s in ns)


def test_plans_change_the_current_resources(store: BrainStore) -> None:
    store.persist("job-a", schemas.MetricsReport(job=reports.job_info(workers=2)))
    plan = ResourcePlan(
        job="job-a", replica_resources={ReplicaType.WORKER: ReplicaResourceSpec(replicas=3)}
    )
    plan_id, _ = store.add_plan("job-a", OptimizeStage.RUNNING, plan, [], 5.0)
    metrics = store.metrics("job-a")
    assert [p.id for p in metrics.plans] == [plan_id]
    assert job_stats(metrics).current[ReplicaType.WORKER] == ReplicaResources(3, 1.0, 2048)
    assert store.stats_until("job-a") == 5.0


def test_plan_resources_keep_unset_fields_from_before() -> None:
    base = {ReplicaType.PS: ReplicaResources(2, 2.0, 4096)}
    plan = ResourcePlan(
        replica_resources={
            ReplicaType.PS: ReplicaResourceSpec(replicas=2, resource=ResourceSpec(cpu=3.0))
        }
    )
    assert apply_plans(base, [plan])[ReplicaType.PS] == ReplicaResources(2, 3.0, 4096)


def test_cluster_nodes_show_their_newest_usage(store: BrainStore) -> None:
    for t, used in [(1.0, 0.5), (2.0, 1.5)]:
        node = schemas.ClusterNodeReport(
            name="host-1",
            timestamp=t,
            cpu_capacity=8,
            memory_capacity_mb=16000,
            cpu_used=used,
            memory_used_mb=1000,
        )
        store.report_cluster(schemas.ClusterReport(nodes=[node]))
    [node] = store.cluster_nodes()
    assert node.cpu_used == 1.5 and node.timestamp == 2.0


def test_history_only_holds_jobs_sharing_the_model_or_dataset(store: BrainStore) -> None:
    for name, model in [("a", "bert"), ("b", "gpt"), ("c", "bert")]:
        report = schemas.MetricsReport(
            job=reports.job_info(name, model=model), status=schemas.JobStatus.SUCCEEDED
        )
        store.persist(name, report)
    like = reports.job_info("c", model="bert").profile()
    assert [j.profile.name for j in store.finished_jobs(like=like)] == ["a"]
    assert len(store.finished_jobs()) == 3


def test_a_training_node_s_gpu_memory_and_utilisation_are_kept(store: BrainStore) -> None:
    ns = [
        schemas.NodeSampleMessage(
            node="worker-0",
            replica_type=ReplicaType.WORKER,
            timestamp=100.0 + t,
            cpu_percent=90.0,
            memory_mb=2000.0,
            gpu_memory_mb=30_000.0 + t,
            gpu_percent=87.5,
        )
        for t in range(3)
    ]
    store.persist("job-a", schemas.MetricsReport(job=reports.job_info(), node_samples=ns))
    assert store.metrics("job-a").node_samples == ns
