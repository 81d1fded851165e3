from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.api import ElasticJob, OptimizeMode, ReplicaType, ResourcePlan
from flexjob.core.planner import NodeEvent, NodeEventKind
from flexjob.core.training.master_config import MasterConfig, planned_job
from flexjob.master.optimizer import JobOptimizer, to_scale_plan
from flexjob.master.optimizer_loop import job_info
from flexjob.rpc import brain_messages as schemas
from flexjob.rpc.brain_client import BrainClient
from tests.brain import recorded, reports
from tests.support.brain import in_process_brain

KNEE = recorded.load("throughput_knee")
SPEED = recorded.speed_samples(KNEE)
JOB = reports.job_info("default.job", workers=1, limits=schemas.JobLimitsMessage(max_replicas=8))


@pytest.fixture
def brain(tmp_path: Path) -> Iterator[BrainClient]:
    with in_process_brain(tmp_path) as client:
        yield client


def _grow(
    opt: JobOptimizer, start: int, rounds: int = 8, rtype: ReplicaType = ReplicaType.WORKER
) -> list[int]:
    """Run the job as the optimizer says: feed the recorded speed at each size it asks for
    (of ``rtype``, the job's training type)."""
    workers, sizes = start, [start]
    for _ in range(rounds):
        for s in SPEED:
            if s.world_size == workers:
                opt.observe_speed(s)
        plan = opt.step()
        if plan is None:
            break
        workers = plan.replica_resources[rtype].replicas
        sizes.append(workers)
    return sizes


def test_manual_mode_never_plans() -> None:
    opt = JobOptimizer(JOB, OptimizeMode.MANUAL)
    assert opt.initial_plan() is None
    assert _grow(opt, 1) == [1]


def test_single_job_mode_grows_to_the_knee_on_in_memory_stats() -> None:
    opt = JobOptimizer(JOB, OptimizeMode.SINGLE_JOB)
    assert _grow(opt, 1) == [1, 2, 3, 4, 5, KNEE["knee"]]
    assert opt.current()[ReplicaType.WORKER].replicas == KNEE["knee"]


def test_an_initial_plan_that_changes_the_job_is_returned(brain: BrainClient) -> None:
    old = reports.job_info("default.old", workers=3, model="bert")
    brain.persist_metrics(
        old.name, schemas.MetricsReport(job=old, status=schemas.JobStatus.SUCCEEDED)
    )
    job = reports.job_info("default.new", workers=1, model="bert")
    plan = JobOptimizer(job, OptimizeMode.CLUSTER, brain).initial_plan()
    assert plan is not None and plan.replica_resources[ReplicaType.WORKER].replicas == 3


def test_a_learner_job_is_planned_within_the_bounds_of_its_rendezvous() -> None:
    job = ElasticJob.model_validate(
        {
            "metadata": {"name": "rl"},
            "spec": {
                "replicaSpecs": {
                    "learner": {"replicas": 1, "minReplicas": 1, "maxReplicas": 3},
                    "collector": {"replicas": 2},
                }
            },
        }
    )
    config = MasterConfig.from_job(job)
    info = job_info(config.job_name, config.rendezvous, config.optimizer)
    rendezvous = (config.rendezvous.min_nodes, config.rendezvous.max_nodes)
    assert (info.limits.min_replicas, info.limits.max_replicas) == rendezvous == (1, 3)
    opt = JobOptimizer(info, OptimizeMode.SINGLE_JOB)
    assert _grow(opt, 1, rtype=ReplicaType.LEARNER) == [1, 2, 3]
    assert opt.current()[ReplicaType.COLLECTOR].replicas == 2


def test_single_job_mode_answers_an_oom_once() -> None:
    job = reports.job_info("default.job", limits=schemas.JobLimitsMessage(max_memory_mb=8192))
    opt = JobOptimizer(job, OptimizeMode.SINGLE_JOB)
    opt.observe_event(NodeEvent("worker-0", ReplicaType.WORKER, NodeEventKind.OOM, 5.0, 4096))
    plan = opt.step()
    assert plan is not None and plan.node_resources["worker-0"].memory == 6144
    assert opt.step() is None


def test_cluster_mode_needs_a_brain() -> None:
    with pytest.raises(ValueError, match=r"spec\.brainService"):
        JobOptimizer(JOB, OptimizeMode.CLUSTER)


def test_cluster_mode_plans_come_from_the_brain_which_keeps_the_stats(
    brain: BrainClient,
) -> None:
    opt = JobOptimizer(JOB, OptimizeMode.CLUSTER, brain)
    assert opt.initial_plan() is None  # the brain's initial plan is the spec: nothing to do
    assert len(opt.plans) == 1
    assert _grow(opt, 1) == [1, 2, 3, 4, 5, KNEE["knee"]]
    stored = brain.get_job_metrics(JOB.name)
    assert len(stored.speed_samples) == len(SPEED)
    assert [p.plan for p in stored.plans] == opt.plans


def test_restarted_cluster_master_reloads_history_and_continues(brain: BrainClient) -> None:
    first = JobOptimizer(JOB, OptimizeMode.CLUSTER, brain)
    first.initial_plan()
    sizes = _grow(first, 1, rounds=2)
    assert sizes == [1, 2, 3]
    # the master dies; a new one starts with the same job and asks the brain for its history
    second = JobOptimizer(JOB, OptimizeMode.CLUSTER, brain)
    assert second.restore()
    assert second.plans == first.plans
    assert second.current()[ReplicaType.WORKER].replicas == 3
    assert second.initial_plan() is None
    assert _grow(second, 3) == [3, 4, 5, KNEE["knee"]]
    assert len(brain.get_job_metrics(JOB.name).plans) == len(second.plans)


def test_restore_without_history_says_so(brain: BrainClient) -> None:
    assert not JobOptimizer(JOB, OptimizeMode.CLUSTER, brain).restore()


def test_stats_are_kept_while_the_brain_is_down() -> None:
    down = BrainClient("http://127.0.0.1:9", timeout=0.2)
    opt = JobOptimizer(JOB, OptimizeMode.CLUSTER, down)
    opt.observe_speed(SPEED[0])
    assert opt.step() is None
    assert not opt.flush()


def test_scale_plan_carries_counts_and_migrates_resized_nodes() -> None:
    plan = ResourcePlan.model_validate(
        {
            "job": "default.job",
            "replicaResources": {"worker": {"replicas": 3}},
            "nodeResources": {"ps-1": {"cpu": 3.0}, "worker-2": {"memory": 6144}},
            "reason": "why",
        }
    )
    types = {"ps-1": ReplicaType.PS, "worker-2": ReplicaType.WORKER}
    sp = to_scale_plan(plan, "job", "default", 4, plan_id=17, node_types=types)
    assert sp.metadata.name == "job-plan-4" and sp.spec.owner_job == "job"
    assert sp.spec.replica_resource_specs[ReplicaType.WORKER].replicas == 3
    assert [(p.name, p.type) for p in sp.spec.migrate_pods] == [
        ("ps-1", ReplicaType.PS),
        ("worker-2", ReplicaType.WORKER),
    ]
    assert sp.metadata.annotations["flexjob.dev/brain-plan-id"] == "17"


def test_job_info_reads_limits_and_profile_from_the_spec() -> None:
    job = ElasticJob.model_validate(
        {
            "metadata": {"name": "bert", "labels": {"flexjob.dev/model": "bert-base"}},
            "spec": {
                "optimizeMode": "cluster",
                "dataset": {"name": "wiki", "size": 100},
                "replicaSpecs": {
                    "worker": {
                        "replicas": 2,
                        "minReplicas": 1,
                        "maxReplicas": 6,
                        "template": {
                            "spec": {
                                "containers": [
                                    {
                                        "name": "main",
                                        "resources": {
                                            "requests": {"cpu": "500m", "memory": "1Gi"},
                                            "limits": {"cpu": 2, "memory": "8Gi"},
                                        },
                                    }
                                ]
                            }
                        },
                    }
                },
            },
        }
    )
    info = schemas.JobInfoMessage.from_core(planned_job(job), OptimizeMode.CLUSTER)
    assert (info.name, info.model, info.dataset) == ("default.bert", "bert-base", "wiki")
    assert info.optimize_mode is OptimizeMode.CLUSTER
    assert info.resources[ReplicaType.WORKER] == schemas.ReplicaResourcesMessage(
        replicas=2, cpu=0.5, memory_mb=1024
    )
    assert info.limits == schemas.JobLimitsMessage(
        min_replicas=1, max_replicas=6, max_cpu=2, max_memory_mb=8192
    )


def test_scale_plan_of_a_ps_change_names_the_ps_set_to_run() -> None:
    grow = ResourcePlan.model_validate({"replicaResources": {"ps": {"replicas": 3}}})
    assert to_scale_plan(grow, "job", "default", 1).spec.ps_hosts == [
        "job-ps-0",
        "job-ps-1",
        "job-ps-2",
    ]
    workers = ResourcePlan.model_validate({"replicaResources": {"worker": {"replicas": 3}}})
    assert to_scale_plan(workers, "job", "default", 2).spec.ps_hosts == []
