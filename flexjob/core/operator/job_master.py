"""The implicit job master: which jobs get one from the operator, and how it is rendered.

A flexjob-native job that uses the flexjob rendezvous but declares no ``master`` replica gets
one: the operator adds a ``master`` replica spec running ``flexjob master`` before it
reconciles (``with_job_master``), so the master is created first, gets a service, and every
worker finds it in ``FLEXJOB_MASTER``. The stored job is not changed; the replica is visible
as ``<job>-master-0``.

The rule (``needs_job_master``, owned by ``api.master_rule``): the job has no ``master``
replica spec, and it has
``elasticPolicy.rdzvBackend: flexjob``, a ``dataset`` or ``batch`` block, ``ps`` replicas
(a parameter-server job: its PS replicas register with the master), or
``enableDynamicSharding: true`` (a DLRover ``ElasticJob`` defaults to it). A declared ``master``
whose main container names no command (an ElasticDL ``Master`` without its own image's
entrypoint) is flexjob's too (``flexjob_runs_master``). Jobs that declare a master with a
command of their own (DI, user masters) keep it as is.

Success of such a job is decided on its workers (every worker replica succeeded), as for a job
without a master; the master is then removed by ``cleanPodPolicy`` (it is still running).

Parameter servers likewise: ``ps`` replicas of a job with flexjob's master whose main
container names no command run ``flexjob ps`` (``ps_replica_spec``, applied by
``with_job_master``), with a port so each gets a service and finds its own address in
``FLEXJOB_REPLICA_ADDRESS``. Which command each role runs is its ``builtin_command`` in
``api.roles``.

How the master runs comes from the driver (``JobMasterConfig``): locally
``sys.executable -m flexjob``, on Kubernetes the operator's own image (``FLEXJOB_IMAGE``).
The master's typed ``MasterConfig`` (``core.training.master_config``) travels as JSON in
``FLEXJOB_MASTER_CONFIG``; the master binds the port of its ``FLEXJOB_MASTER`` address. The
job's token reaches the replicas that hold it (``TOKEN_HOLDERS``: the master only; a PS
replica holds its PS secret instead, ``rpc.ps_auth``) in the environment, never on a command
line: locally ``FLEXJOB_MASTER_TOKEN_FILE`` names the 0600 file
``<token_root>/<ns>/<job>/master.token`` (the local operator writes it), on Kubernetes
``FLEXJOB_MASTER_TOKEN`` comes from the Secret ``<job>-master-token`` (``secretKeyRef``; the
operator creates it, owned by the job). Every other replica gets only its node's credential
(``FLEXJOB_NODE_CREDENTIAL``), which the operator computes when it creates the replica
(``operator.node_credentials``). Pure: no I/O.
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
    names,
)
from flexjob.api.master_rule import flexjob_runs_master as flexjob_runs_master  # re-exported
from flexjob.api.master_rule import has_own_command
from flexjob.api.master_rule import needs_job_master as needs_job_master  # re-exported
from flexjob.api.name_rules import check_path_part
from flexjob.api.names import (
    ENV_BRAIN_TOKEN,
    ENV_IMAGE,
    ENV_MASTER_CONFIG,
    ENV_MASTER_TOKEN,
    ENV_MASTER_TOKEN_FILE,
    MASTER_TOKEN_FILE,
)
from flexjob.api.pod import ContainerPort, PodSpec, PodTemplateSpec
from flexjob.api.roles import MASTER_TYPE, PS_TYPE, TOKEN_HOLDERS, command_of
from flexjob.core.operator.job_metrics import with_metrics_endpoint
from flexjob.core.operator.master_state import (
    IMAGE_GROUP_ID,
    PER_JOB_STATE,
    MasterStateStorage,
    StateVolume,
    state_volume,
)
from flexjob.core.training.master_config import MasterConfig

MASTER_CONTAINER = MASTER_TYPE.value
#: The service account implicit masters run as on Kubernetes (``flexjob manifests install``
#: creates it with ``operator.manifests.JOB_MASTER_RULES``).
JOB_MASTER_SERVICE_ACCOUNT = "flexjob-job-master"
#: The key of the token in a job's master-token Secret.
SECRET_TOKEN_KEY = "token"
TOKEN_FILE = MASTER_TOKEN_FILE
#: Where implicit masters on Kubernetes keep their state: the mount path of their state volume
#: (``core.operator.master_state``).
KUBERNETES_STATE_ROOT = "/var/lib/flexjob/masters"
#: The name of that volume in the master pod.
STATE_VOLUME = "flexjob-master-state"


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
    (``master_token_secret``, Kubernetes); ``state_storage``: the PersistentVolumeClaim
    each master pod mounts at ``state_root`` (``core.operator.master_state``: by default one
    per job, created by the operator), so that a master pod that is killed and relaunched
    continues where it was (Kubernetes; None = no volume: the local platform, whose masters
    keep their state in a folder of this machine); ``brain_token_secret``: a
    Secret (key ``token``, in the job's namespace) whose token the master sends to the brain
    (``FLEXJOB_BRAIN_TOKEN`` read through ``secretKeyRef``, never a command line; Kubernetes;
    "" = none).
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
    state_storage: MasterStateStorage | None = None
    brain_token_secret: str = ""

    def state_volume(self, job: str) -> StateVolume | None:
        """The claim ``job``'s master keeps its state on (``master_state.state_volume``);
        None when it has no state volume."""
        return state_volume(job, self.state_storage) if self.state_root else None


def no_job_master_message(trigger: str) -> str:
    """Why a job that needs flexjob's job master (``trigger``: the field that needs it,
    ``api.master_rule.master_trigger``) cannot run on an operator that runs none (a Kubernetes
    operator without ``FLEXJOB_IMAGE``)."""
    return (
        f"{trigger} needs flexjob's job master, and this operator runs none: set {ENV_IMAGE} "
        "(the image job masters run; `flexjob manifests install` sets it) in the operator's "
        "environment, then submit the job again"
    )


def _job_parts(namespace: str, job: str) -> tuple[str, str]:
    """``namespace`` and ``job`` when each is one path part (``api.name_rules``), so that a
    path built from them stays under its root; else ``InvalidSpecError`` naming the field."""
    return check_path_part("metadata.namespace", namespace), check_path_part("metadata.name", job)


def master_token_file(root: str, namespace: str, job: str) -> str:
    """The local token file of ``job``: ``<root>/<namespace>/<job>/master.token``."""
    return "/".join((root, *_job_parts(namespace, job), TOKEN_FILE))


def master_token_secret(job: str) -> str:
    """The name of the Secret holding ``job``'s master token (Kubernetes)."""
    return f"{job}-master-token"


def kubernetes_job_master(
    image: str,
    state: MasterStateStorage = PER_JOB_STATE,
    state_root: str = KUBERNETES_STATE_ROOT,
    brain_token_secret: str = "",
) -> JobMasterConfig:
    """Implicit masters on Kubernetes: ``image`` (the operator's own, ``FLEXJOB_IMAGE``) runs
    ``python -m flexjob master`` bound to all addresses, writing ScalePlan objects as the
    ``flexjob-job-master`` service account (``flexjob manifests install`` grants it); its
    state lives on the claim ``state`` gives it (by default its job's own), mounted at
    ``state_root``, unless ``state`` keeps none; with ``brain_token_secret``, it reads the
    brain's token from that Secret."""
    return JobMasterConfig(
        command=("python", "-m", "flexjob"),
        image=image,
        host="0.0.0.0",
        scale_plan_platform="kubernetes",
        service_account=JOB_MASTER_SERVICE_ACCOUNT,
        token_secret=True,
        state_root=state_root if state.keep else "",
        state_storage=state if state.keep else None,
        brain_token_secret=brain_token_secret,
    )


def incarnation_dir(state_root: str, job: ElasticJob, kind: str) -> str:
    """``<state_root>/<ns>/<job>/<kind>-<uid>``: the folder one incarnation of ``job`` keeps
    ``kind``'s state in (a new uid, a fresh folder). A name or uid that is not one path part
    is refused (``InvalidSpecError`` naming it): the reconcile then fails the job by it."""
    incarnation = check_path_part("metadata.uid", f"{kind}-{job.metadata.uid or 'unknown'}")
    return "/".join((state_root, *_job_parts(job.namespace, job.name), incarnation))


def master_job_dir(state_root: str, job: ElasticJob) -> str:
    """Where the implicit master of this incarnation of ``job`` keeps its state and
    timeline, under ``state_root``."""
    return incarnation_dir(state_root, job, MASTER_TYPE.value)


def master_replica_spec(job: ElasticJob, options: JobMasterConfig) -> ReplicaSpec:
    """The replica spec of ``job``'s implicit master: ``flexjob master`` with the job's
    ``MasterConfig`` in ``FLEXJOB_MASTER_CONFIG``. A spec no master can run with raises
    ``InvalidSpecError`` naming the field."""
    job_dir = None
    if options.state_root:
        job_dir = master_job_dir(options.state_root, job)
    config = MasterConfig.from_job(
        job,
        host=options.host,
        job_dir=job_dir,
        scale_plan_platform=options.scale_plan_platform or None,
    )
    args = [command_of(MASTER_TYPE)]
    env = {**options.env, ENV_MASTER_CONFIG: config.to_json()}
    container = Container(
        name=MASTER_CONTAINER,
        image=options.image or None,
        command=list(options.command),
        args=args,
        env=[EnvVar(name=k, value=v) for k, v in env.items()],
    )
    if options.brain_token_secret:
        ref = {"secretKeyRef": {"name": options.brain_token_secret, "key": SECRET_TOKEN_KEY}}
        container.env.append(EnvVar.model_validate({"name": ENV_BRAIN_TOKEN, "valueFrom": ref}))
    pod = PodSpec(containers=[container], service_account_name=options.service_account or None)
    volume = options.state_volume(job.name)
    if volume is not None:
        pod = _with_state_volume(pod, volume, options.state_root)
    return ReplicaSpec(
        replicas=1, restart_policy=RestartPolicy.ON_FAILURE, template=PodTemplateSpec(spec=pod)
    )


def _with_state_volume(pod: PodSpec, volume: StateVolume, state_root: str) -> PodSpec:
    """``pod`` whose main container mounts the claim ``volume`` at ``state_root``; a claim
    made for the job gets the image's group as ``fsGroup`` (a fresh volume is root's)."""
    wire = pod.to_wire()
    claim = {"name": STATE_VOLUME, "persistentVolumeClaim": {"claimName": volume.claim}}
    wire["volumes"] = [*(wire.get("volumes") or []), claim]
    [main, *others] = wire["containers"]
    mount = {"name": STATE_VOLUME, "mountPath": state_root}
    main["volumeMounts"] = [*(main.get("volumeMounts") or []), mount]
    wire["containers"] = [main, *others]
    if volume.created:
        wire["securityContext"] = {**(wire.get("securityContext") or {}), "fsGroup": IMAGE_GROUP_ID}
    return PodSpec.model_validate(wire)


def ps_checkpoint_dir(job: ElasticJob, options: JobMasterConfig) -> str:
    """Where ``job``'s command-less PS replicas checkpoint their partitions: under
    ``state_root`` where every PS pod reaches it (a local folder, or a shared state claim
    they mount, ``ps_volume``); "" = no checkpoints (no state kept, or the job's own claim,
    which only its master's node may mount)."""
    if not options.state_root:
        return ""
    if options.state_storage is not None and ps_volume(job, options) is None:
        return ""
    return incarnation_dir(options.state_root, job, PS_TYPE.value)


def ps_volume(job: ElasticJob, options: JobMasterConfig) -> StateVolume | None:
    """The shared state claim ``job``'s PS replicas mount for their checkpoints, if any."""
    volume = options.state_volume(job.name)
    return volume if volume is not None and volume.shared else None


def ps_replica_spec(
    spec: ReplicaSpec,
    options: JobMasterConfig,
    checkpoint_dir: str = "",
    volume: StateVolume | None = None,
) -> ReplicaSpec:
    """A ``ps`` replica spec whose main container runs ``flexjob ps`` on a port of its own,
    checkpointing its partition to ``checkpoint_dir`` (shared by the job's PS set) if given,
    on the claim ``volume`` (mounted at ``state_root``) if given."""
    template = spec.template.model_copy(deep=True)
    if not template.spec.containers:
        template.spec.containers = [Container(name=PS_TYPE.value)]
    main = template.spec.containers[0]
    main.command = list(options.command)
    main.args = [command_of(PS_TYPE), "--host", options.host]
    if checkpoint_dir:
        main.args += ["--checkpoint-dir", checkpoint_dir]
    if options.image and not main.image:
        main.image = options.image
    if not main.ports:
        main.ports = [ContainerPort(container_port=names.DEFAULT_PS_PORT, name=PS_TYPE.value)]
    if volume is not None:
        template.spec = _with_state_volume(template.spec, volume, options.state_root)
    return spec.model_copy(update={"template": template})


def with_job_master(job: ElasticJob, options: JobMasterConfig | None) -> ElasticJob:
    """``job`` with its implicit master added (or its command-less master filled in) and its
    command-less ``ps`` replicas running ``flexjob ps``, when ``options`` are given; otherwise
    ``job`` itself."""
    if options is None:
        return job
    specs = dict(job.spec.replica_specs)
    if needs_job_master(job):
        specs.pop(MASTER_TYPE, None)
        specs = {MASTER_TYPE: master_replica_spec(job, options), **specs}
    ps = specs.get(PS_TYPE)
    if ps is not None and not has_own_command(ps) and flexjob_runs_master(job):
        checkpoints = ps_checkpoint_dir(job, options)
        volume = ps_volume(job, options) if checkpoints else None
        specs[PS_TYPE] = ps_replica_spec(ps, options, checkpoints, volume)
    if flexjob_runs_master(job):
        return _with_job_token(job, specs, options)
    if specs == job.spec.replica_specs:
        return job
    return job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": specs})})


def _with_job_token(
    job: ElasticJob, specs: dict[ReplicaType, ReplicaSpec], options: JobMasterConfig
) -> ElasticJob:
    """``job`` with ``specs`` and the master's token reaching the ``TOKEN_HOLDERS`` only: a
    0600 file's path locally, the job's Secret on Kubernetes (where every replica also serves
    its metrics where Prometheus reaches it: ``core.operator.job_metrics``)."""
    specs = {
        t: _with_token(s, job.namespace, job.name, options) if t in TOKEN_HOLDERS else s
        for t, s in specs.items()
    }
    if options.token_secret:
        specs = {t: with_metrics_endpoint(s) for t, s in specs.items()}
    envs = {
        k: v for k, v in job.spec.envs.items() if k not in (ENV_MASTER_TOKEN, ENV_MASTER_TOKEN_FILE)
    }
    update = {"replica_specs": specs, "envs": envs}
    return job.model_copy(update={"spec": job.spec.model_copy(update=update)})


def _with_token(
    spec: ReplicaSpec, namespace: str, job: str, options: JobMasterConfig
) -> ReplicaSpec:
    """``spec`` whose containers read the job's token: ``FLEXJOB_MASTER_TOKEN_FILE`` (local)
    or ``FLEXJOB_MASTER_TOKEN`` from the job's Secret (Kubernetes)."""
    added: list[EnvVar] = []
    if options.token_root:
        path = master_token_file(options.token_root, namespace, job)
        added.append(EnvVar(name=ENV_MASTER_TOKEN_FILE, value=path))
    if options.token_secret:
        ref = {"secretKeyRef": {"name": master_token_secret(job), "key": SECRET_TOKEN_KEY}}
        added.append(EnvVar.model_validate({"name": ENV_MASTER_TOKEN, "valueFrom": ref}))
    template = spec.template.model_copy(deep=True)
    for container in template.spec.containers:
        kept = [e for e in container.env if e.name not in (ENV_MASTER_TOKEN, ENV_MASTER_TOKEN_FILE)]
        container.env = [*kept, *added]
    return spec.model_copy(update={"template": template})
