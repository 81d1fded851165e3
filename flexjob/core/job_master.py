"""The implicit job master: which jobs get one from the operator, and how it is rendered.

A flexjob-native job that uses the flexjob rendezvous but declares no ``master`` replica gets
one: the operator adds a ``master`` replica spec running ``flexjob master`` before it
reconciles (``with_job_master``), so the master is created first, gets a service, and every
worker finds it in ``FLEXJOB_MASTER``. The stored job is not changed; the replica is visible
as ``<job>-master-0``.

The rule (``needs_job_master``): the job has no ``master`` replica spec, and it has
``elasticPolicy.rdzvBackend: flexjob`` or a ``dataset`` or ``batch`` block. Jobs that declare
their own ``master`` (DI, ElasticDL, user masters) keep it as is.

Success of such a job is decided on its workers (every worker replica succeeded), as for a job
without a master; the master is then removed by ``cleanPodPolicy`` (it is still running).

How the master runs comes from the driver (``JobMasterConfig``): locally
``sys.executable -m flexjob``, on Kubernetes the operator's own image (``FLEXJOB_IMAGE``).
The master's typed ``MasterConfig`` (``core.master_config``) travels as JSON in
``FLEXJOB_MASTER_CONFIG``; the master binds the port of its ``FLEXJOB_MASTER`` address. The
job's token reaches the master and every replica in the environment, never on a command line:
locally ``FLEXJOB_MASTER_TOKEN_FILE`` names the 0600 file
``<token_root>/<ns>/<job>/master.token`` (the local operator writes it), on Kubernetes
``FLEXJOB_MASTER_TOKEN`` comes from the Secret ``<job>-master-token`` (``secretKeyRef``; the
operator creates it, owned by the job). Pure: no I/O.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

from flexjob.api import (
    Container,
    ElasticJob,
    EnvVar,
    ReplicaSpec,
    ReplicaType,
    RestartPolicy,
)
from flexjob.api.names import ENV_MASTER_CONFIG, ENV_MASTER_TOKEN, ENV_MASTER_TOKEN_FILE
from flexjob.api.pod import PodSpec, PodTemplateSpec
from flexjob.core.master_config import MasterConfig

RDZV_BACKEND_FLEXJOB = "flexjob"
MASTER_CONTAINER = "master"
#: The service account implicit masters run as on Kubernetes (``flexjob manifests install``
#: creates it with ``operator.manifests.JOB_MASTER_RULES``).
JOB_MASTER_SERVICE_ACCOUNT = "flexjob-job-master"
#: The key of the token in a job's master-token Secret.
SECRET_TOKEN_KEY = "token"
TOKEN_FILE = "master.token"


@dataclass(frozen=True, slots=True)
class JobMasterConfig:
    """How the operator runs implicit job masters.

    ``command``: the argv prefix that runs the ``flexjob`` CLI (``flexjob master ...`` is
    appended); ``image``: the container image (Kubernetes); ``host``: the address the master
    binds; ``scale_plan_platform``: where the master writes ScalePlans ("local",
    "kubernetes"; "" = files in its job dir); ``env``: extra environment for the master;
    ``state_root``: where masters keep their state (``<root>/<ns>/<job>/master-<uid>``, one
    folder per job incarnation, so a restarted master continues and a re-submitted job of the
    same name starts fresh); "" = no state kept across master restarts; ``service_account``:
    the pod's ``serviceAccountName`` (Kubernetes: the identity allowed to write ScalePlans;
    "" = the namespace's default; the local platform ignores it); ``token_root``: where the
    local operator keeps each job's token file (``master_token_file``; "" = none);
    ``token_secret``: give every replica the token of the job's Secret
    (``master_token_secret``, Kubernetes).
    """

    command: tuple[str, ...] = ("python", "-m", "flexjob")
    image: str = ""
    host: str = "127.0.0.1"
    scale_plan_platform: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    state_root: str = ""
    service_account: str = ""
    token_root: str = ""
    token_secret: bool = False


def master_token_file(root: str, namespace: str, job: str) -> str:
    """The local token file of ``job``: ``<root>/<namespace>/<job>/master.token``."""
    return "/".join((root, namespace, job, TOKEN_FILE))


def master_token_secret(job: str) -> str:
    """The name of the Secret holding ``job``'s master token (Kubernetes)."""
    return f"{job}-master-token"


def kubernetes_job_master(image: str) -> JobMasterConfig:
    """Implicit masters on Kubernetes: ``image`` (the operator's own, ``FLEXJOB_IMAGE``) runs
    ``python -m flexjob master`` bound to all addresses, writing ScalePlan objects as the
    ``flexjob-job-master`` service account (``flexjob manifests install`` grants it)."""
    return JobMasterConfig(
        command=("python", "-m", "flexjob"),
        image=image,
        host="0.0.0.0",
        scale_plan_platform="kubernetes",
        service_account=JOB_MASTER_SERVICE_ACCOUNT,
        token_secret=True,
    )


def needs_job_master(job: ElasticJob) -> bool:
    """True when the operator must add a flexjob job master to ``job`` (see module doc)."""
    spec = job.spec
    if ReplicaType.MASTER in spec.replica_specs:
        return False
    policy = spec.elastic_policy
    flexjob_rdzv = policy is not None and (policy.rdzv_backend or "") == RDZV_BACKEND_FLEXJOB
    return flexjob_rdzv or spec.dataset is not None or spec.batch is not None


def master_replica_spec(job: ElasticJob, options: JobMasterConfig) -> ReplicaSpec:
    """The replica spec of ``job``'s implicit master: ``flexjob master`` with the job's
    ``MasterConfig`` in ``FLEXJOB_MASTER_CONFIG``. A spec no master can run with raises
    ``InvalidSpecError`` naming the field."""
    job_dir = None
    if options.state_root:
        incarnation = f"master-{job.metadata.uid or 'unknown'}"
        job_dir = "/".join((options.state_root, job.namespace, job.name, incarnation))
    config = MasterConfig.from_job(
        job,
        host=options.host,
        job_dir=job_dir,
        scale_plan_platform=options.scale_plan_platform or None,
    )
    args = ["master"]
    env = {**options.env, ENV_MASTER_CONFIG: config.to_json()}
    container = Container(
        name=MASTER_CONTAINER,
        image=options.image or None,
        command=list(options.command),
        args=args,
        env=[EnvVar(name=k, value=v) for k, v in env.items()],
    )
    return ReplicaSpec(
        replicas=1,
        restart_policy=RestartPolicy.ON_FAILURE,
        template=PodTemplateSpec(
            spec=PodSpec(
                containers=[container], service_account_name=options.service_account or None
            )
        ),
    )


def with_job_master(job: ElasticJob, options: JobMasterConfig | None) -> ElasticJob:
    """``job`` with its implicit master added when it needs one and ``options`` are given;
    otherwise ``job`` itself."""
    if options is None or not needs_job_master(job):
        return job
    specs = {ReplicaType.MASTER: master_replica_spec(job, options), **job.spec.replica_specs}
    envs = dict(job.spec.envs)
    if options.token_root:
        envs[ENV_MASTER_TOKEN_FILE] = master_token_file(options.token_root, job.namespace, job.name)
    if options.token_secret:
        specs = {t: _with_secret_token(s, job.name) for t, s in specs.items()}
    update = {"replica_specs": specs, "envs": envs}
    return job.model_copy(update={"spec": job.spec.model_copy(update=update)})


def _with_secret_token(spec: ReplicaSpec, job: str) -> ReplicaSpec:
    """``spec`` whose containers read ``FLEXJOB_MASTER_TOKEN`` from the job's Secret."""
    ref = {"secretKeyRef": {"name": master_token_secret(job), "key": SECRET_TOKEN_KEY}}
    template = spec.template.model_copy(deep=True)
    for container in template.spec.containers:
        kept = [e for e in container.env if e.name != ENV_MASTER_TOKEN]
        container.env = [*kept, EnvVar.model_validate({"name": ENV_MASTER_TOKEN, "valueFrom": ref})]
    return spec.model_copy(update={"template": template})
