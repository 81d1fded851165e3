"""The implicit job master: which jobs get one, how it is rendered, and how such a job ends."""

import pytest

from flexjob.api import (
    BatchSpec,
    DatasetSpec,
    ElasticJob,
    ElasticPolicy,
    JobPhase,
    ReplicaType,
    names,
)
from flexjob.core.operator.actions import CreateReplica
from flexjob.core.operator.job_master import (
    JOB_MASTER_SERVICE_ACCOUNT,
    JobMasterConfig,
    kubernetes_job_master,
    needs_job_master,
    with_job_master,
)
from flexjob.core.training.master_config import MasterConfig
from tests.core.operator.reconcile_sim import Sim, kinds, make_job

OPTIONS = JobMasterConfig(
    command=("python", "-m", "flexjob"),
    image="flexjob:1",
    host="0.0.0.0",
    scale_plan_platform="kubernetes",
    env={"EXTRA": "x"},
)


def elastic_job(*, master: bool = False, rdzv: str | None = "flexjob") -> ElasticJob:
    job = make_job(master=master, workers=2)
    if rdzv is not None:
        job.spec.elastic_policy = ElasticPolicy(rdzv_backend=rdzv)
    return job


def with_dataset() -> ElasticJob:
    job = elastic_job(rdzv=None)
    job.spec.dataset = DatasetSpec(size=100)
    return job


def with_batch() -> ElasticJob:
    job = elastic_job(rdzv=None)
    job.spec.batch = BatchSpec(global_batch_size=64, micro_batch_size=32)
    return job


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (elastic_job(), True),
        (with_dataset(), True),
        (with_batch(), True),
        (elastic_job(rdzv="c10d"), False),
        (elastic_job(rdzv=None), False),
        (elastic_job(master=True), False),
    ],
    ids=["rdzv-flexjob", "dataset", "batch", "rdzv-c10d", "plain", "own-master"],
)
def test_which_jobs_need_a_job_master(job: ElasticJob, expected: bool) -> None:
    assert needs_job_master(job) is expected


def test_without_options_the_job_is_unchanged() -> None:
    job = elastic_job()
    assert with_job_master(job, None) is job


def test_a_declared_master_is_kept_as_the_user_wrote_it() -> None:
    job = elastic_job(master=True)
    assert with_job_master(job, OPTIONS) is job


def master_request(sim: Sim) -> CreateReplica:
    for actions in sim.history:
        for action in actions:
            if isinstance(action, CreateReplica) and action.request.type is ReplicaType.MASTER:
                return action
    raise AssertionError("no master was created")


def shipped_config(sim: Sim) -> MasterConfig:
    return MasterConfig.from_json(master_request(sim).request.env[names.ENV_MASTER_CONFIG])


def test_master_is_created_first_running_flexjob_master_with_the_job() -> None:
    sim = Sim(elastic_job(), job_master=OPTIONS)
    assert kinds(sim.step()) == ["service demo-master-0"]
    assert kinds(sim.step())[0] == "create demo-master-0"
    request = master_request(sim).request
    assert request.command == ("python", "-m", "flexjob")
    assert request.args == ("master",)
    assert request.image == "flexjob:1"
    assert request.env["EXTRA"] == "x"
    assert request.env[names.ENV_MASTER] == "demo-master-0:50001"
    config = shipped_config(sim)
    assert config == MasterConfig.from_job(
        sim.job, host="0.0.0.0", scale_plan_platform="kubernetes"
    )
    assert (config.host, config.scale_plan_platform) == ("0.0.0.0", "kubernetes")


@pytest.mark.parametrize(
    ("options", "service_account"),
    [
        (kubernetes_job_master("flexjob:1"), JOB_MASTER_SERVICE_ACCOUNT),
        (JobMasterConfig(service_account="trainer-sa"), "trainer-sa"),
        (JobMasterConfig(), None),
    ],
    ids=["kubernetes", "explicit", "local-default"],
)
def test_master_pod_runs_as_the_options_service_account(
    options: JobMasterConfig, service_account: str | None
) -> None:
    sim = Sim(elastic_job(), job_master=options)
    sim.settle()
    template = master_request(sim).request.template
    assert template.spec.service_account_name == service_account
    assert template.to_wire()["spec"].get("serviceAccountName") == service_account


def test_master_keeps_its_state_in_a_folder_of_this_job_incarnation() -> None:
    job = elastic_job()
    job.metadata.uid = "u-1"
    options = JobMasterConfig(state_root="/home/me/.flexjob/jobs")
    sim = Sim(job, job_master=options)
    sim.settle()
    assert shipped_config(sim).job_dir == f"/home/me/.flexjob/jobs/{job.namespace}/demo/master-u-1"


def test_without_a_state_root_the_master_keeps_no_state() -> None:
    sim = Sim(elastic_job(), job_master=OPTIONS)
    sim.settle()
    assert shipped_config(sim).job_dir is None


def test_workers_get_the_implicit_masters_address() -> None:
    sim = Sim(elastic_job(), job_master=OPTIONS)
    sim.settle()
    workers = [a.request for acts in sim.history for a in acts if isinstance(a, CreateReplica)]
    addresses = {r.name: r.env.get(names.ENV_MASTER) for r in workers}
    assert addresses == {
        "demo-master-0": "demo-master-0:50001",
        "demo-worker-0": "demo-master-0:50001",
        "demo-worker-1": "demo-master-0:50001",
    }
    assert sim.phase is JobPhase.RUNNING


def test_job_succeeds_when_every_worker_succeeded_and_the_master_is_removed() -> None:
    sim = Sim(elastic_job(), job_master=OPTIONS)
    sim.settle()
    sim.finish("demo-worker-0", 0)
    assert kinds(sim.step()) == []
    sim.finish("demo-worker-1", 0)
    assert kinds(sim.step()) == ["delete demo-master-0", "unservice demo-master-0"]
    assert sim.phase is JobPhase.SUCCEEDED
    assert sim.job.status is not None
    assert sim.job.status.message == "every worker replica succeeded"


def test_failed_implicit_master_is_restarted_within_backoff_limit() -> None:
    sim = Sim(elastic_job(), job_master=OPTIONS)
    sim.settle()
    sim.finish("demo-master-0", 1)
    assert kinds(sim.step()) == ["delete demo-master-0"]
    assert sim.phase is JobPhase.RESTARTING
    sim.settle()
    assert "demo-master-0" in sim.replicas


def _token_env(sim: Sim) -> dict[str, list[dict[str, object]]]:
    """Every created replica's env entries for the master token, by short name."""
    out = {}
    for actions in sim.history:
        for action in actions:
            if isinstance(action, CreateReplica):
                env = action.request.template.to_wire()["spec"]["containers"][0]["env"]
                out[action.request.short_name] = [
                    e for e in env if str(e["name"]).startswith("FLEXJOB_MASTER_TOKEN")
                ]
    return out


def test_on_kubernetes_only_the_master_reads_the_token_from_the_jobs_secret() -> None:
    sim = Sim(elastic_job(), job_master=kubernetes_job_master("flexjob:1"))
    sim.settle()
    ref = {"secretKeyRef": {"name": "demo-master-token", "key": "token"}}
    expected = [{"name": names.ENV_MASTER_TOKEN, "valueFrom": ref}]
    assert _token_env(sim) == {"master-0": expected, "worker-0": [], "worker-1": []}
    assert not any("token" in arg for arg in master_request(sim).request.args)


def test_locally_only_the_master_gets_the_path_of_the_jobs_token_file() -> None:
    sim = Sim(elastic_job(), job_master=JobMasterConfig(token_root="/home/me/.flexjob/jobs"))
    sim.settle()
    path = f"/home/me/.flexjob/jobs/{sim.job.namespace}/demo/master.token"
    expected = [{"name": names.ENV_MASTER_TOKEN_FILE, "value": path}]
    assert _token_env(sim) == {"master-0": expected, "worker-0": [], "worker-1": []}


def test_a_job_without_an_implicit_master_gets_no_token() -> None:
    sim = Sim(elastic_job(rdzv="c10d"), job_master=kubernetes_job_master("flexjob:1"))
    sim.settle()
    assert set(map(len, _token_env(sim).values())) == {0}


def test_kubernetes_master_reads_the_brain_token_from_the_named_secret() -> None:
    options = kubernetes_job_master("flexjob:1", brain_token_secret="flexjob-brain-token")
    sim = Sim(elastic_job(), job_master=options)
    sim.settle()
    request = master_request(sim).request
    env = request.template.to_wire()["spec"]["containers"][0]["env"]
    ref = {"secretKeyRef": {"name": "flexjob-brain-token", "key": "token"}}
    assert {"name": names.ENV_BRAIN_TOKEN, "valueFrom": ref} in env
    assert not any("token" in arg for arg in request.args)


def test_without_a_brain_token_secret_the_master_gets_no_brain_token() -> None:
    sim = Sim(elastic_job(), job_master=kubernetes_job_master("flexjob:1"))
    sim.settle()
    env = master_request(sim).request.template.to_wire()["spec"]["containers"][0]["env"]
    assert not any(e["name"] == names.ENV_BRAIN_TOKEN for e in env)


def _no_master_cases() -> list[tuple[str, ElasticJob, str]]:
    own = make_job(master=True, workers=1)
    own.spec.replica_specs[ReplicaType.MASTER].template.spec.containers[0].command = []
    sharding = make_job(master=False, workers=1)
    sharding.spec.enable_dynamic_sharding = True
    dataset = make_job(master=False, workers=1)
    dataset.spec.dataset = DatasetSpec(size=10)
    batch = make_job(master=False, workers=1)
    batch.spec.batch = BatchSpec(global_batch_size=8, micro_batch_size=4)
    return [
        ("rdzv", elastic_job(), "spec.elasticPolicy.rdzvBackend: flexjob"),
        ("dataset", dataset, "spec.dataset"),
        ("batch", batch, "spec.batch"),
        ("ps", make_job(master=False, workers=1, ps=1), "spec.replicaSpecs.ps"),
        ("sharding", sharding, "spec.enableDynamicSharding: true"),
        ("command-less-master", own, "spec.replicaSpecs.master (no command)"),
    ]


@pytest.mark.parametrize(
    ("job", "trigger"),
    [pytest.param(job, trigger, id=name) for name, job, trigger in _no_master_cases()],
)
def test_a_job_that_needs_flexjobs_master_fails_naming_why_where_the_operator_runs_none(
    job: ElasticJob, trigger: str
) -> None:
    """A Kubernetes operator without FLEXJOB_IMAGE runs no job master: the job fails at once
    (no replica started that could not find one), naming the field and the fix."""
    sim = Sim(job)  # no JobMasterConfig
    acts = sim.step()
    assert kinds(acts) == []
    assert sim.phase is JobPhase.FAILED
    assert sim.job.status is not None
    condition = sim.job.status.conditions[-1]
    assert condition.reason == "NoJobMaster"
    assert condition.message.startswith(f"{trigger} needs flexjob's job master")
    assert "set FLEXJOB_IMAGE" in condition.message
    assert kinds(sim.step()) == []  # decided once
    with_master = Sim(job, job_master=OPTIONS)
    with_master.settle()
    assert with_master.phase is JobPhase.RUNNING
    assert "demo-master-0" in with_master.replicas


def test_a_job_that_needs_no_flexjob_master_runs_without_one() -> None:
    for job in (make_job(master=True, workers=1), elastic_job(rdzv="c10d")):
        sim = Sim(job)
        sim.settle()
        assert sim.phase is JobPhase.RUNNING
