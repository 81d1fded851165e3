"""A TensorFlow parameter-server job (its ps replicas run their own command: a Kubeflow TFJob,
a DLRover ElasticJob) gets ``TF_CONFIG`` on every chief / worker / ps / evaluator replica, each
behind a service, created once the whole cluster has addresses; the evaluator has its task but
is not listed; the chief decides success; a changed ps count restarts every member with the new
cluster, a replaced ps restarts nobody (``core.operator.tf_cluster``)."""

import json

from flexjob.api import ElasticJob, JobPhase, ReplicaType, names
from flexjob.api.load import job_from_dict, load_job
from flexjob.core.operator.actions import CreateReplica, DeleteReplica
from flexjob.core.operator.job_master import JobMasterConfig
from tests.api.specs import EXAMPLES
from tests.core.operator.reconcile_sim import Sim
from tests.support.manifests import manifest

TF = {"name": "tensorflow", "image": "tf", "command": ["python", "train.py"]}


def tfjob(**counts: int) -> ElasticJob:
    replicas = {
        kind: {"replicas": n, "template": {"spec": {"containers": [TF]}}}
        for kind, n in counts.items()
    }
    doc = manifest("TFJob", "demo", {"tfReplicaSpecs": replicas}, api_version="kubeflow.org/v1")
    return job_from_dict(doc)


def configs(sim: Sim) -> dict[str, dict[str, object]]:
    """The last ``TF_CONFIG`` each replica was created with, by short name (``ps-0``)."""
    out = {}
    for acts in sim.history:
        for a in acts:
            if isinstance(a, CreateReplica) and names.ENV_TF_CONFIG in a.request.env:
                out[a.request.name.removeprefix(f"{sim.job.name}-")] = json.loads(
                    a.request.env[names.ENV_TF_CONFIG]
                )
    return out


def test_every_member_gets_the_cluster_and_its_own_task() -> None:
    sim = Sim(tfjob(Chief=1, Worker=2, PS=2, Evaluator=1), job_master=JobMasterConfig())
    sim.settle()
    cluster = {
        "chief": ["demo-chief-0:2222"],
        "worker": ["demo-worker-0:2222", "demo-worker-1:2222"],
        "ps": ["demo-ps-0:2222", "demo-ps-1:2222"],
    }
    tasks = {
        name: {"cluster": cluster, "task": {"type": name.split("-")[0], "index": int(name[-1])}}
        for name in ("chief-0", "worker-0", "worker-1", "ps-0", "ps-1", "evaluator-0")
    }
    assert configs(sim) == tasks  # the evaluator: its task, not listed in the cluster
    assert {f"demo-{n}" for n in tasks} <= set(sim.services)


def test_no_member_starts_before_every_member_has_an_address() -> None:
    sim = Sim(tfjob(Chief=1, Worker=1, PS=1), job_master=JobMasterConfig())
    created = []
    for _ in range(6):
        sim.run_all()
        acts = sim.step()
        made = [a.request.name for a in acts if isinstance(a, CreateReplica)]
        if any(n != "demo-master-0" for n in made):
            assert {"demo-chief-0", "demo-worker-0", "demo-ps-0"} <= set(sim.services)
        created += made
    assert sorted(created) == ["demo-chief-0", "demo-master-0", "demo-ps-0", "demo-worker-0"]


def test_the_dlrover_example_gets_tf_config_and_flexjobs_own_ps_gets_none() -> None:
    sim = Sim(load_job(EXAMPLES / "dlrover-elasticjob.yaml"), job_master=JobMasterConfig())
    sim.settle()
    found = {n: c["task"] for n, c in configs(sim).items()}
    assert found == {"ps-0": {"type": "ps", "index": 0}, "worker-0": {"type": "worker", "index": 0}}
    own_ps = Sim(load_job(EXAMPLES / "dlrover-ps-ctr.yaml"), job_master=JobMasterConfig())
    own_ps.settle()
    assert configs(own_ps) == {}  # its ps run flexjob's PS: no TensorFlow cluster


def test_the_chief_decides_success_and_the_servers_are_stopped() -> None:
    sim = Sim(tfjob(Chief=1, Worker=2, PS=1), job_master=JobMasterConfig())
    sim.settle()
    sim.finish("demo-worker-0", 0)
    sim.step()
    assert sim.phase is not JobPhase.SUCCEEDED
    sim.finish("demo-chief-0", 0)
    acts = sim.step()
    assert sim.phase is JobPhase.SUCCEEDED
    assert sim.job.status is not None and sim.job.status.message == "chief 0 succeeded"
    deleted = {a.name for a in acts if isinstance(a, DeleteReplica)}
    assert {"demo-worker-1", "demo-ps-0"} <= deleted  # they serve until stopped


def test_a_new_ps_count_restarts_every_member_with_the_new_cluster() -> None:
    sim = Sim(tfjob(Chief=1, Worker=1, PS=1), job_master=JobMasterConfig())
    sim.settle()
    sim.ask(ps=2)
    sim.settle()
    restarted = [
        a.name
        for acts in sim.history
        for a in acts
        if isinstance(a, DeleteReplica) and a.reason.startswith("TF_CONFIG")
    ]
    assert sorted(restarted) == ["demo-chief-0", "demo-ps-0", "demo-worker-0"]
    for name, config in configs(sim).items():
        assert config["cluster"]["ps"] == ["demo-ps-0:2222", "demo-ps-1:2222"], name


def test_a_replaced_ps_keeps_its_address_and_restarts_nobody() -> None:
    sim = Sim(tfjob(Chief=1, Worker=1, PS=1), job_master=JobMasterConfig())
    sim.settle()
    sim.finish("demo-ps-0", 137)
    sim.settle()
    deleted = [a.name for acts in sim.history for a in acts if isinstance(a, DeleteReplica)]
    assert deleted == ["demo-ps-0"]
    assert sim.replicas["demo-ps-0"].type is ReplicaType.PS
