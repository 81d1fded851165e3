import json
from pathlib import Path

from flexjob.api import ElasticJob, OptimizeMode, ReplicaType
from flexjob.core import planner
from flexjob.core.training.master_config import MasterConfig, OptimizerConfig
from flexjob.core.training.rendezvous import RendezvousConfig
from flexjob.master.optimizer import ANNOTATION_REASON, JobOptimizer
from flexjob.master.optimizer_loop import DirectorySink, OptimizerLoop, job_info, plan_sink
from flexjob.master.stats import NodeRecord
from flexjob.platform.local import LocalPlatform
from flexjob.rpc import brain_messages as schemas
from flexjob.rpc.messages import NodeStats


class FakeMaster:
    """The master's stats as ``stats_snapshot`` returns them, editable by the test."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeRecord] = {}
        self.world = 0

    def report(
        self,
        node: str,
        sps: float,
        world: int,
        memory_mb: int = 1024,
        rtype: ReplicaType = ReplicaType.WORKER,
    ) -> None:
        rec = self.nodes.setdefault(node, NodeRecord(replica_type=rtype))
        rec.latest = NodeStats(50.0, memory_mb * 2**20, 1, sps, world, 1.0)
        rec.reports += 1

    def fail(self, node: str, reason: str) -> None:
        rec = self.nodes.setdefault(node, NodeRecord())
        rec.failures += 1
        rec.last_failure = reason

    def stats_snapshot(self) -> tuple[dict[str, NodeRecord], int]:
        return dict(self.nodes), self.world


def _loop(
    master: FakeMaster, sink: list[object], job: schemas.JobInfoMessage | None = None
) -> OptimizerLoop:
    job = job or schemas.JobInfoMessage(
        name="job",
        resources={ReplicaType.WORKER: schemas.ReplicaResourcesMessage(replicas=2, memory_mb=1024)},
    )
    opt = JobOptimizer(job, OptimizeMode.SINGLE_JOB)
    return OptimizerLoop(master, opt, sink.append, "job", clock=lambda: 100.0)


def _fresh(
    job: schemas.JobInfoMessage | None = None,
) -> tuple[FakeMaster, list[object], OptimizerLoop]:
    """A loop over a fake master with no nodes yet; the list its plans go to."""
    master, sink = FakeMaster(), []
    return master, sink, _loop(master, sink, job)


def test_job_speed_is_the_sum_of_nodes_with_new_reports() -> None:
    master, _, loop = _fresh()
    master.report("worker-0", 100.0, 2)
    master.report("worker-1", 120.0, 2)
    loop.feed()
    loop.feed()  # nothing new: no second sample
    [speed] = loop.optimizer.stats().speed_samples
    assert (speed.samples_per_second, speed.world_size) == (220.0, 2)


def test_a_failure_mentioning_oom_becomes_a_memory_plan() -> None:
    master, sink, loop = _fresh()
    master.report("worker-1", 10.0, 2, memory_mb=1000)
    master.fail("worker-1", "process killed: Out of memory")
    loop.tick()
    [plan] = sink
    assert plan.spec.migrate_pods[0].name == "worker-1"  # type: ignore[attr-defined]
    # 1.5 x the 1024 MiB the worker had (not the 1000 it was last seen using)
    assert plan.spec.migrate_pods[0].resource.memory == 1536  # type: ignore[attr-defined]


def test_a_second_oom_grows_from_the_memory_the_first_plan_gave() -> None:
    master, sink, loop = _fresh()
    master.fail("worker-1", "OOMKilled")
    loop.tick()
    master.fail("worker-1", "OOMKilled")
    loop.clock = lambda: 200.0
    loop.tick()
    assert [p.spec.migrate_pods[0].resource.memory for p in sink] == [1536, 2304]  # type: ignore[attr-defined]


def test_ps_cpu_use_is_measured_against_the_cores_it_was_given() -> None:
    job = schemas.JobInfoMessage(
        name="job",
        resources={ReplicaType.PS: schemas.ReplicaResourcesMessage(replicas=1, cpu=2.0)},
        limits=schemas.JobLimitsMessage(max_cpu=4.0),
    )
    master, sink, loop = _fresh(job)
    for t in range(4):
        master.report("ps-0", 0.0, 0, rtype=ReplicaType.PS)
        master.nodes["ps-0"].latest = NodeStats(190.0, 2**30, 0, 0.0, 0, float(t + 1))
        loop.tick()
    [plan] = sink
    assert plan.spec.migrate_pods[0].resource.cpu == 3.0  # type: ignore[attr-defined]


def test_other_failures_do_not_raise_memory() -> None:
    master, sink, loop = _fresh()
    master.fail("worker-1", "exit code 1")
    loop.tick()
    assert sink == []


def test_directory_sink_writes_one_file_per_plan(tmp_path: Path) -> None:
    master, written = FakeMaster(), []
    loop = _loop(master, written)
    loop.sink = DirectorySink(tmp_path)
    master.fail("worker-1", "OOM")
    loop.tick()
    [path] = tmp_path.glob("*.json")
    assert path.name == "job-plan-2.json"  # plan 1, the initial plan, changed nothing
    assert json.loads(path.read_text())["spec"]["ownerJob"] == "job"


def test_master_config_from_a_job_carries_the_optimize_mode_and_brain() -> None:
    job = ElasticJob.model_validate(
        {
            "metadata": {"name": "j"},
            "spec": {
                "optimizeMode": "cluster",
                "brainService": "http://brain:50100",
                "replicaSpecs": {"worker": {"replicas": 2, "maxReplicas": 4}},
            },
        }
    )
    config = MasterConfig.from_json(MasterConfig.from_job(job).to_json())
    assert (config.optimizer.mode, config.optimizer.brain_url) == ("cluster", "http://brain:50100")
    info = job_info(config.job_name, config.rendezvous, config.optimizer)
    assert info.name == "default.j" and info.limits.max_replicas == 4


def test_job_info_without_a_spec_comes_from_the_node_bounds() -> None:
    info = job_info("j", RendezvousConfig(min_nodes=2, max_nodes=5), OptimizerConfig())
    assert info.resources[ReplicaType.WORKER].replicas == 2
    assert (info.limits.min_replicas, info.limits.max_replicas) == (2, 5)


def tick_after_an_oom(scale_plan_platform: str) -> None:
    """One tick of the single-job optimiser of job ``ns/j`` (1 worker of 1,024 MiB) after its
    worker-0 was OOM-killed: it writes a ScalePlan through ``scale_plan_platform``."""
    config = MasterConfig(
        job_name="j",
        scale_plan_platform=scale_plan_platform,
        optimizer=OptimizerConfig(
            mode=OptimizeMode.SINGLE_JOB,
            job=planner.PlannedJob(
                planner.JobProfile("ns.j"),
                resources={ReplicaType.WORKER: planner.ReplicaResources(1, memory_mb=1024)},
            ),
        ),
    )
    master = FakeMaster()
    sink = plan_sink(config.scale_plan_platform, config.job_dir)
    loop = OptimizerLoop.for_job(config.job_name, config.rendezvous, config.optimizer, master, sink)
    master.fail("worker-0", "OOMKilled")
    loop.tick()


def test_scale_plans_go_to_the_local_platform_for_its_operator(
    home_platform: LocalPlatform,
) -> None:
    platform = home_platform
    tick_after_an_oom("local")
    [plan] = platform.list_scale_plans("ns", "j")
    assert plan.spec.owner_job == "j" and plan.spec.migrate_pods[0].resource.memory == 1536


def test_ps_load_reported_by_the_ps_replicas_plans_one_more_ps() -> None:
    """Real PS stats (requests/s, partition bytes) reach the planner: one PS serving 9x the
    others gets the set re-partitioned over one more PS (a ScalePlan the operator and the
    master's PS-set driver carry out)."""
    master, sink = FakeMaster(), []
    job = schemas.JobInfoMessage(
        name="job",
        resources={
            ReplicaType.WORKER: schemas.ReplicaResourcesMessage(replicas=2, memory_mb=1024),
            ReplicaType.PS: schemas.ReplicaResourcesMessage(replicas=2, memory_mb=1024),
        },
    )
    loop = _loop(master, sink, job)
    for t in range(3):
        for index, rate in enumerate((900.0, 100.0)):
            node = f"ps-{index}"
            rec = master.nodes.setdefault(node, NodeRecord(replica_type=ReplicaType.PS))
            rec.latest = NodeStats(20.0, 2**28, 0, 0.0, 0, 10.0 + t, rate, 2**20)
            rec.reports += 1
        loop.feed()
    loop.tick()
    plans = [p for p in sink if ReplicaType.PS in p.spec.replica_resource_specs]  # type: ignore[attr-defined]
    assert plans, sink
    assert plans[-1].spec.replica_resource_specs[ReplicaType.PS].replicas == 3  # type: ignore[attr-defined]
    reason = plans[-1].metadata.annotations[ANNOTATION_REASON]  # type: ignore[attr-defined]
    assert "unbalanced PS (ps-0 serves 900 requests/s" in reason
