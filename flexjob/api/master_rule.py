"""Which jobs have flexjob's job master, and the spec fields only that master acts on.

For: the operator (``core.operator.job_master`` adds the master by ``needs_job_master``; phases
decide such a job on its workers by ``flexjob_runs_master``) and validation (``api.validate``
rejects ``MASTER_ONLY_FIELDS`` on a job that will have no flexjob master, naming the field, instead
of accepting and dropping them). The rule: a job has flexjob's master when it declares a
``master`` whose main container names no command and the job has no ``jobArgs`` (those are
for the command line of a master of the job's own: its image's entrypoint), or declares none and has
``elasticPolicy.rdzvBackend: flexjob``, a ``dataset`` or ``batch`` block, ``ps`` replicas or
``enableDynamicSharding: true``. A job with no master at all (none declared, none added, no DI
coordinator) forms a plain torch world instead (``plain_torch_world``; ``core.operator.torch_world``
renders its environment). No I/O.
"""

from flexjob.api.enums import OptimizeMode, ReplicaType
from flexjob.api.job import ElasticJob, ReplicaSpec
from flexjob.api.problems import Problem
from flexjob.api.roles import controlling_type

RDZV_BACKEND_FLEXJOB = "flexjob"

#: Spec fields (camelCase) that only flexjob's job master acts on (``core.training.master_config``).
MASTER_ONLY_FIELDS = ("dataset", "batch", "stragglers", "masterSettings", "brainService")
#: ``optimizeMode`` values only flexjob's master acts on (its optimizer); ``manual`` (no
#: optimizer) says what a job without that master does anyway. Defaulting sets ``single-job``
#: only on a job with flexjob's master (``api.defaults``).
MASTER_ONLY_OPTIMIZE_MODES = (OptimizeMode.SINGLE_JOB, OptimizeMode.CLUSTER)


def has_own_command(spec: ReplicaSpec) -> bool:
    containers = spec.template.spec.containers
    return bool(containers and containers[0].command)


def runs_own_master(job: ElasticJob, declared: ReplicaSpec) -> bool:
    """The declared master is the job's own: it names a command, or the job has ``jobArgs``
    for its image's entrypoint (an ElasticDL Master in an image of its own)."""
    return has_own_command(declared) or bool(job.spec.job_args)


def master_trigger(job: ElasticJob) -> str | None:
    """The spec field that makes the operator run flexjob's job master for ``job`` (see module
    doc), as the user wrote it (``spec.dataset``, ``spec.elasticPolicy.rdzvBackend:
    flexjob``...), or None when the job gets none."""
    spec = job.spec
    declared = spec.replica_specs.get(ReplicaType.MASTER)
    if declared is not None:
        own = runs_own_master(job, declared)
        return None if own else "spec.replicaSpecs.master (no command)"
    policy = spec.elastic_policy
    if policy is not None and (policy.rdzv_backend or "") == RDZV_BACKEND_FLEXJOB:
        return f"spec.elasticPolicy.rdzvBackend: {RDZV_BACKEND_FLEXJOB}"
    if spec.dataset is not None:
        return "spec.dataset"
    if spec.batch is not None:
        return "spec.batch"
    if ReplicaType.PS in spec.replica_specs:
        return "spec.replicaSpecs.ps"
    if spec.enable_dynamic_sharding is True:
        return "spec.enableDynamicSharding: true"
    return None


def needs_job_master(job: ElasticJob) -> bool:
    """True when the operator must add a flexjob job master to ``job`` (see module doc)."""
    return master_trigger(job) is not None


def flexjob_runs_master(job: ElasticJob) -> bool:
    """True when the job's master is flexjob's (added, or declared without a command); its
    success is then decided on its workers."""
    declared = job.spec.replica_specs.get(ReplicaType.MASTER)
    if declared is not None:
        return not runs_own_master(job, declared)
    return needs_job_master(job)


def plain_torch_world(job: ElasticJob) -> bool:
    """True when ``job``'s training replicas form one torch world on their own, as Kubeflow's
    PyTorchJob pods do (``MASTER_ADDR``/``RANK``/``WORLD_SIZE`` from the operator, ``env://``
    in the user's code): the job has no master of any kind: it declares none (nor a DI
    coordinator) and flexjob adds none (``needs_job_master``)."""
    return controlling_type(job.spec.replica_specs) is None and not needs_job_master(job)


def master_field_problems(job: ElasticJob) -> list[Problem]:
    """One problem per ``MASTER_ONLY_FIELDS`` field set on a job without flexjob's master."""
    if flexjob_runs_master(job):
        return []
    if ReplicaType.MASTER in job.spec.replica_specs:
        why = (
            "this job runs its own master (spec.replicaSpecs.master has a command, or the job "
            "has spec.jobArgs): remove it, or drop that command and those arguments so that "
            "flexjob's master runs"
        )
    else:
        why = (
            "this job has none: set spec.elasticPolicy.rdzvBackend: flexjob (its workers run "
            "`flexjob agent`), or remove it"
        )
    wire = job.spec.to_wire()
    problems = [
        Problem(f"spec.{key}", wire[key], f"only flexjob's job master acts on it, and {why}")
        for key in MASTER_ONLY_FIELDS
        if wire.get(key) is not None
    ]
    mode = job.spec.optimize_mode
    if mode in MASTER_ONLY_OPTIMIZE_MODES:
        message = (
            f"only flexjob's job master runs the optimizer ({mode.value}), and {why}; "
            f"or set {OptimizeMode.MANUAL.value} (no optimizer)"
        )
        problems.append(Problem("spec.optimizeMode", mode.value, message))
    return problems
