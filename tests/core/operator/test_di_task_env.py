"""DI Orchestrator v2's variables on a DIJob v2's replicas (``core.operator.di_task_env``):
ranks over every replica, each replica's host in ``DI_NODES``, its type's under
``DI_<TASK>_NODES``, the job id; no replica before every Service is known."""

from flexjob.api.load import load_job
from flexjob.core.operator.actions import CreateReplica, CreateService
from flexjob.core.operator.di_task_env import task_nodes_name
from tests.api.specs import EXAMPLES
from tests.core.operator.reconcile_sim import Sim
from tests.core.operator.test_torch_world import envs


def _sim() -> Sim:
    job = load_job(EXAMPLES / "dijob-v2.yaml")  # learner 1, collector 2, evaluator 1
    job.metadata.name = "demo"
    return Sim(job)


def test_every_replica_gets_its_rank_the_jobs_hosts_and_its_types_hosts() -> None:
    sim = _sim()
    sim.settle()
    by_name = envs(sim)
    order = ["learner-0", "collector-0", "collector-1", "evaluator-0"]
    hosts = ",".join(f"demo-{n}" for n in order)  # each replica's Service host
    assert {n: e["DI_RANK"] for n, e in by_name.items()} == {n: str(i) for i, n in enumerate(order)}
    assert {e["DI_NODES"] for e in by_name.values()} == {hosts}
    assert {e["DI_JOB_ID"] for e in by_name.values()} == {"default/demo"}
    collectors = "demo-collector-0,demo-collector-1"
    assert by_name["collector-1"]["DI_COLLECTOR_NODES"] == collectors
    assert by_name["learner-0"]["DI_LEARNER_NODES"] == "demo-learner-0"
    assert "DI_COLLECTOR_NODES" not in by_name["learner-0"]
    nodes = by_name["learner-0"]["DI_NODES"].split(",")
    assert [nodes[int(e["DI_RANK"])] for e in by_name.values()] == [
        f"demo-{n}" for n in by_name
    ]  # DI-engine's k8s parser: DI_NODES[DI_RANK] is the replica's own address


def test_no_replica_is_created_before_every_replicas_service() -> None:
    sim = _sim()
    kinds = {type(a) for a in sim.step()}
    assert CreateService in kinds and CreateReplica not in kinds


def test_a_task_name_is_upper_case_with_underscores() -> None:
    assert task_nodes_name("collector-b") == "DI_COLLECTOR_B_NODES"
