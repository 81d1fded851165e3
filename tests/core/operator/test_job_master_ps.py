"""Parameter-server jobs: flexjob runs their master and their command-less PS replicas, and
the workers decide success."""

from flexjob.api import ElasticJob, JobPhase, ReplicaType, names
from flexjob.core.operator.actions import CreateReplica
from flexjob.core.operator.job_master import (
    JobMasterConfig,
    flexjob_runs_master,
    needs_job_master,
    with_job_master,
)
from tests.core.operator.reconcile_sim import Sim, kinds, make_job

OPTIONS = JobMasterConfig(command=("python", "-m", "flexjob"), host="0.0.0.0", image="fj:1")


def ps_job(
    *, ps_command: bool = False, master: bool = False, master_command: bool = True
) -> ElasticJob:
    job = make_job(master=master, workers=2, ps=2)
    if not ps_command:
        job.spec.replica_specs[ReplicaType.PS].template.spec.containers[0].command = []
        job.spec.replica_specs[ReplicaType.PS].template.spec.containers[0].ports = []
    if master and not master_command:
        job.spec.replica_specs[ReplicaType.MASTER].template.spec.containers[0].command = []
    return job


def created(sim: Sim) -> dict[str, CreateReplica]:
    return {a.request.name: a for acts in sim.history for a in acts if isinstance(a, CreateReplica)}


def test_a_job_with_ps_replicas_gets_a_flexjob_master() -> None:
    assert needs_job_master(ps_job()) is True
    assert flexjob_runs_master(ps_job()) is True
    assert needs_job_master(ps_job(master=True)) is False
    assert needs_job_master(ps_job(master=True, master_command=False)) is True
    assert flexjob_runs_master(ps_job(master=True, master_command=False)) is True


def test_command_less_ps_replicas_run_flexjob_ps_on_a_service_port() -> None:
    sim = Sim(ps_job(), job_master=OPTIONS)
    sim.settle()
    reqs = created(sim)
    ps0 = reqs["demo-ps-0"].request
    assert ps0.command == ("python", "-m", "flexjob")
    assert ps0.args == ("ps", "--host", "0.0.0.0")
    assert ps0.image == "img"  # its own image is kept
    assert ps0.service == "demo-ps-0"
    assert ps0.env[names.ENV_MASTER] == "demo-master-0:50001"
    assert {r.request.env[names.ENV_NUM_PS] for r in reqs.values()} == {"2"}
    assert sim.phase is JobPhase.RUNNING


def test_with_a_state_root_each_ps_checkpoints_to_its_job_incarnations_folder() -> None:
    job = ps_job()
    job.metadata.uid = "u1"
    options = JobMasterConfig(command=("flexjob",), host="127.0.0.1", state_root="/s")
    ps = with_job_master(job, options).spec.replica_specs[ReplicaType.PS]
    args = ps.template.spec.containers[0].args
    assert args == [
        "ps",
        "--host",
        "127.0.0.1",
        "--checkpoint-dir",
        f"/s/{job.namespace}/demo/ps-u1",
    ]


def test_ps_replicas_with_their_own_command_are_kept() -> None:
    job = ps_job(ps_command=True)
    effective = with_job_master(job, OPTIONS)
    assert effective.spec.replica_specs[ReplicaType.PS] == job.spec.replica_specs[ReplicaType.PS]


def test_ps_job_succeeds_when_its_workers_do_and_ps_are_cleaned_up() -> None:
    sim = Sim(ps_job(master=True, master_command=False), job_master=OPTIONS)
    sim.settle()
    assert created(sim)["demo-master-0"].request.args[0] == "master"
    sim.finish("demo-worker-0", 0)
    sim.finish("demo-worker-1", 0)
    actions = kinds(sim.step())
    assert sim.phase is JobPhase.SUCCEEDED
    assert "delete demo-ps-0" in actions and "delete demo-master-0" in actions
    assert sim.job.status is not None
    assert sim.job.status.message == "every worker replica succeeded"
