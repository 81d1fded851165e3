"""A job with no master forms a plain torch world: its rank-0 replica (the chief, else
worker-0) gets a service, and every training replica gets MASTER_ADDR/MASTER_PORT, WORLD_SIZE
and RANK as Kubeflow's PyTorchJob pods do; with an elasticPolicy the PET_* flags torchrun reads
(``core.operator.torch_world``)."""

from typing import Any

import pytest

from flexjob.api import ElasticJob, ElasticPolicy, ReplicaSpec, ReplicaType, names
from flexjob.api.load import job_from_dict, load_job
from flexjob.core.operator.actions import CreateReplica
from flexjob.core.operator.job_master import JobMasterConfig
from flexjob.core.operator.torch_world import world_rank
from tests.api.specs import EXAMPLES
from tests.core.operator.reconcile_sim import Sim, kinds, make_job, template
from tests.support.manifests import manifest

TORCH_VARS = (
    names.ENV_MASTER_ADDR,
    names.ENV_MASTER_PORT,
    names.ENV_WORLD_SIZE,
    names.ENV_RANK,
)
PET_VARS = (
    names.ENV_PET_NNODES,
    names.ENV_PET_RDZV_ENDPOINT,
    names.ENV_PET_RDZV_BACKEND,
    names.ENV_PET_NPROC_PER_NODE,
    names.ENV_PET_MAX_RESTARTS,
)


def envs(sim: Sim) -> dict[str, dict[str, str]]:
    """The environment of every replica created so far, by short name (``worker-0``)."""
    return {
        a.request.name.removeprefix("demo-"): dict(a.request.env)
        for acts in sim.history
        for a in acts
        if isinstance(a, CreateReplica)
    }


def torch_vars(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k in TORCH_VARS or k in PET_VARS}


def with_chief(job: ElasticJob) -> ElasticJob:
    specs = {
        ReplicaType.CHIEF: ReplicaSpec(replicas=1, template=template()),
        **job.spec.replica_specs,
    }
    return job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": specs})})


def with_policy(job: ElasticJob, **policy: Any) -> ElasticJob:
    spec = job.spec.model_copy(update={"elastic_policy": ElasticPolicy(**policy)})
    return job.model_copy(update={"spec": spec})


def test_the_chief_is_rank_0_and_the_workers_follow_in_index_order() -> None:
    sim = Sim(with_chief(make_job(master=False, workers=2)))
    assert kinds(sim.step()) == ["service demo-chief-0"]  # nobody starts before rank 0's address
    sim.settle()
    assert sorted(sim.services) == ["demo-chief-0"]
    address = {names.ENV_MASTER_ADDR: "demo-chief-0", names.ENV_MASTER_PORT: "23456"}
    world = {**address, names.ENV_WORLD_SIZE: "3"}
    assert {name: torch_vars(env) for name, env in envs(sim).items()} == {
        "chief-0": {**world, names.ENV_RANK: "0"},
        "worker-0": {**world, names.ENV_RANK: "1"},
        "worker-1": {**world, names.ENV_RANK: "2"},
    }
    assert all(names.ENV_MASTER not in env for env in envs(sim).values())


def test_without_a_chief_worker_0_is_rank_0() -> None:
    sim = Sim(make_job(master=False, workers=3))
    sim.settle()
    assert sorted(sim.services) == ["demo-worker-0"]
    env = envs(sim)
    assert [env[f"worker-{i}"][names.ENV_RANK] for i in range(3)] == ["0", "1", "2"]
    assert {e[names.ENV_MASTER_ADDR] for e in env.values()} == {"demo-worker-0"}
    assert {e[names.ENV_WORLD_SIZE] for e in env.values()} == {"3"}
    assert env["worker-0"][names.ENV_REPLICA_ADDRESS] == "demo-worker-0:23456"
    assert not any(k in e for e in env.values() for k in PET_VARS)  # no elasticPolicy


def test_a_declared_port_is_the_master_port() -> None:
    job = make_job(master=False, workers=2)
    job.spec.replica_specs[ReplicaType.WORKER].template = template(29500)
    sim = Sim(job)
    sim.settle()
    assert {e[names.ENV_MASTER_PORT] for e in envs(sim).values()} == {"29500"}


def test_the_world_size_follows_a_scaled_job() -> None:
    sim = Sim(make_job(master=False, workers=2))
    sim.settle()
    sim.ask(worker=3)
    sim.settle()
    assert envs(sim)["worker-2"][names.ENV_WORLD_SIZE] == "3"
    assert envs(sim)["worker-2"][names.ENV_RANK] == "2"


def test_an_elastic_policy_adds_what_torchrun_reads() -> None:
    job = make_job(master=False, workers=2)
    worker = job.spec.replica_specs[ReplicaType.WORKER]
    job.spec.replica_specs[ReplicaType.WORKER] = worker.model_copy(
        update={"min_replicas": 1, "max_replicas": 4}
    )
    sim = Sim(with_policy(job, rdzv_backend="c10d", n_proc_per_node=2, max_restarts=5))
    sim.settle()
    assert torch_vars(envs(sim)["worker-1"]) == {
        names.ENV_MASTER_ADDR: "demo-worker-0",
        names.ENV_MASTER_PORT: "23456",
        names.ENV_WORLD_SIZE: "2",
        names.ENV_RANK: "1",
        names.ENV_PET_NNODES: "1:4",
        names.ENV_PET_RDZV_ENDPOINT: "demo-worker-0:23456",
        names.ENV_PET_RDZV_BACKEND: "c10d",
        names.ENV_PET_NPROC_PER_NODE: "2",
        names.ENV_PET_MAX_RESTARTS: "5",
    }


def test_a_fixed_size_policy_without_a_backend_means_c10d_on_that_many_nodes() -> None:
    sim = Sim(with_policy(with_chief(make_job(master=False, workers=2))))
    sim.settle()
    env = envs(sim)["worker-0"]
    assert env[names.ENV_PET_NNODES] == "3"  # the chief is a node of the world too
    assert env[names.ENV_PET_RDZV_BACKEND] == "c10d"
    assert env[names.ENV_PET_RDZV_ENDPOINT] == "demo-chief-0:23456"
    assert names.ENV_PET_NPROC_PER_NODE not in env and names.ENV_PET_MAX_RESTARTS not in env


def test_a_pytorchjob_master_is_the_chief_at_rank_0() -> None:
    container = {"name": "pytorch", "image": "i", "command": ["python", "t.py"]}
    template = {"spec": {"containers": [container]}}
    replicas = {
        kind: {"replicas": n, "template": template} for kind, n in (("Worker", 2), ("Master", 1))
    }
    spec = {"pytorchReplicaSpecs": replicas}
    doc = manifest("PyTorchJob", "demo", spec, api_version="kubeflow.org/v1", namespace="ns")
    sim = Sim(job_from_dict(doc), job_master=JobMasterConfig())
    sim.settle()
    assert {n: e[names.ENV_RANK] for n, e in envs(sim).items()} == {
        "chief-0": "0",
        "worker-0": "1",
        "worker-1": "2",
    }


@pytest.mark.parametrize(
    "job",
    [
        pytest.param(make_job(master=True, workers=2), id="declared-master"),
        pytest.param(
            with_policy(make_job(master=False, workers=2), rdzv_backend="flexjob"),
            id="flexjob-rendezvous",
        ),
    ],
)
def test_a_job_with_a_master_gets_no_torch_world(job: ElasticJob) -> None:
    sim = Sim(job, job_master=JobMasterConfig())
    sim.settle()
    workers = {n: e for n, e in envs(sim).items() if n.startswith("worker")}
    assert workers and all(names.ENV_MASTER in e for e in workers.values())
    assert not any(k in e for e in workers.values() for k in TORCH_VARS)
    assert "demo-worker-0" not in sim.services


def test_a_replica_that_does_not_train_has_no_rank() -> None:
    with pytest.raises(ValueError, match="evaluator"):
        world_rank({ReplicaType.WORKER: 2}, ReplicaType.EVALUATOR, 0)


def test_a_di_job_forms_no_torch_world() -> None:
    """DI's learners and collectors talk DI-engine's own protocol: a DIJob v2 (no coordinator,
    no master) gets no torch variables; its services are DI's own, one per replica on DI's
    port (``core.operator.di_task_env``), none a torch rank 0's."""
    job = load_job(EXAMPLES / "dijob-v2.yaml")
    job.metadata.name = "demo"
    sim = Sim(job)
    sim.settle()
    assert sorted(sim.services) == sorted(f"demo-{name}" for name in envs(sim))
    assert {s.address.rpartition(":")[2] for s in sim.services.values() if s.address} == {"22270"}
    assert not any(k in e for e in envs(sim).values() for k in (*TORCH_VARS, *PET_VARS))
