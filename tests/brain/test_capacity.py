"""The cluster-aware Brain: plans that grow a job never ask for more than the Cluster Monitor
reports free, and jobs growing at the same time share it by DRF; the monitor reports job status.
"""

import dataclasses
import threading
import time
from pathlib import Path

from sqlalchemy import Engine

from flexjob.api import ElasticJobStatus, JobPhase, ReplicaType
from flexjob.api.job import ReplicaStatus
from flexjob.brain.capacity import CapacityRounds
from flexjob.brain.monitor import JobSource, run_monitor
from flexjob.brain.processor import OptimizeProcessor
from flexjob.brain.stats_store import BrainStore
from flexjob.core.planner import OptimizeStage
from flexjob.platform.local import LocalPlatform
from flexjob.rpc import brain_messages as schemas
from flexjob.rpc.brain_client import BrainClient
from tests.brain import recorded, reports
from tests.platform.contract import contract_job

SPEED = recorded.speed_samples(recorded.load("throughput_knee"))
W = ReplicaType.WORKER


def cluster(store: BrainStore, cpu: float, used_cpu: float, at: float | None = None) -> None:
    node = schemas.ClusterNodeReport(
        name="n1",
        timestamp=time.time() if at is None else at,
        cpu_capacity=cpu,
        memory_capacity_mb=65536,
        cpu_used=used_cpu,
        memory_used_mb=0,
    )
    store.report_cluster(schemas.ClusterReport(nodes=[node]))


def running(store: BrainStore, job: str, workers: int, later: float = 0.0) -> None:
    """``job`` runs ``workers`` workers (1 CPU each) and measured its speed at that size
    (``later`` seconds after the recorded samples)."""
    store.persist(job, schemas.MetricsReport(job=reports.job_info(job, workers=workers)))
    measured = [
        dataclasses.replace(s, timestamp=s.timestamp + later)
        for s in SPEED
        if s.world_size == workers
    ]
    store.persist(job, schemas.MetricsReport(speed_samples=reports.speed(measured)))


def workers(plan: schemas.OptimizeResponse) -> int | None:
    spec = plan.plan.replica_resources.get(W)
    return spec.replicas if spec else None


def test_a_growing_job_stops_where_the_cluster_is_full(engine: Engine) -> None:
    store = BrainStore(engine)
    processor = OptimizeProcessor(store, capacity=CapacityRounds(store.cluster_nodes, window_s=0))
    size, sizes = 1, [1]
    for _ in range(6):
        cluster(store, cpu=3.0, used_cpu=float(size))  # the job's own workers use 1 CPU each
        running(store, "job", size)
        plan = processor.optimize("job", OptimizeStage.RUNNING)
        if plan.plan.empty:
            break
        size = workers(plan) or size
        sizes.append(size)
    assert sizes == [1, 2, 3]  # the throughput curve alone would go on to 4 and 5
    assert processor.optimize("job", OptimizeStage.RUNNING).plan.empty


def test_without_a_monitored_cluster_plans_are_not_cut(engine: Engine) -> None:
    store = BrainStore(engine)
    processor = OptimizeProcessor(store, capacity=CapacityRounds(store.cluster_nodes, window_s=0))
    running(store, "job", 5)
    assert workers(processor.optimize("job", OptimizeStage.RUNNING)) == 6


def test_a_grant_counts_as_used_until_the_monitor_reports_again(engine: Engine) -> None:
    store = BrainStore(engine)
    processor = OptimizeProcessor(store, capacity=CapacityRounds(store.cluster_nodes, window_s=0))
    cluster(store, cpu=4.0, used_cpu=3.0, at=time.time() - 5)
    running(store, "a", 1)
    running(store, "b", 2)
    assert workers(processor.optimize("a", OptimizeStage.RUNNING)) == 2  # the last free CPU
    assert processor.optimize("b", OptimizeStage.RUNNING).plan.empty  # not granted twice
    cluster(store, cpu=5.0, used_cpu=4.0)  # a's new worker runs; a node grew
    running(store, "b", 2, later=60.0)
    assert workers(processor.optimize("b", OptimizeStage.RUNNING)) == 3


def test_jobs_growing_at_once_share_by_drf_not_by_who_asked_first(engine: Engine) -> None:
    """Room for one more worker; ``big`` (2 workers) asks first, ``small`` (1 worker) a moment
    later in the same round: ``small`` has the lower dominant share and gets it."""
    store = BrainStore(engine)
    rounds = CapacityRounds(store.cluster_nodes, window_s=2.0)
    processor = OptimizeProcessor(store, capacity=rounds)
    cluster(store, cpu=4.0, used_cpu=3.0)
    running(store, "big", 2)
    running(store, "small", 1)
    answers: dict[str, schemas.OptimizeResponse] = {}

    def ask(job: str) -> None:
        answers[job] = processor.optimize(job, OptimizeStage.RUNNING)

    first = threading.Thread(target=ask, args=("big",))
    first.start()
    time.sleep(0.2)  # only orders the two asks; the round stays open 2 s
    ask("small")
    first.join(30)
    assert workers(answers["small"]) == 2
    assert answers["big"].plan.empty


def test_the_monitor_reports_the_platforms_jobs_and_their_status(
    brain: BrainClient, tmp_path: Path
) -> None:
    platform = LocalPlatform(tmp_path / "home")
    try:
        platform.create_job(contract_job("cj"))
        status = ElasticJobStatus(
            phase=JobPhase.RUNNING, replica_statuses={W: ReplicaStatus(active=2, failed=1)}
        )
        platform.patch_job_status(
            "default", "cj", status.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        )
        source = JobSource(platform, "local", clock=lambda: 42.0)
        assert run_monitor(_NoNodes(), brain, iterations=1, jobs=source) == 1
    finally:
        platform.close()
    assert brain.cluster_jobs() == [
        schemas.ClusterJobReport(
            name="default/cj",
            platform="local",
            timestamp=42.0,
            phase="Running",
            replicas={"worker": 2},
        )
    ]


class _NoNodes:
    def sample(self) -> list[schemas.ClusterNodeReport]:
        return []
