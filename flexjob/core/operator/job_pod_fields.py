"""Job-level spec fields that end up in every replica's pod template.

For: ``render_replica`` (``core.operator.replica_plan``). ``spec.volumes`` are shared by every
replica (a replica's own volume of the same name wins), ``spec.priorityClassName`` becomes each
pod's ``priorityClassName`` unless its template names one, and ``spec.jobArgs`` (ElasticDL) are
appended to the master's main container as ``--name value`` (validation accepts them only for
a declared master: its command or its image's entrypoint reads them, never flexjob's).
``spec.elasticPolicy``'s ``nProcPerNode`` and ``maxRestarts`` reach every replica that trains
as environment (``elastic_policy_env``), which ``flexjob agent`` reads. No I/O.
"""

from flexjob.api import ElasticJob, ReplicaType, names
from flexjob.api.pod import PodTemplateSpec
from flexjob.api.roles import MASTER_TYPE, TRAINING_TYPES


def apply_job_fields(job: ElasticJob, rtype: ReplicaType, template: PodTemplateSpec) -> None:
    """Put ``job``'s job-level pod fields into ``template`` (a copy owned by the caller)."""
    spec = job.spec
    pod = template.spec
    own = {v.get("name") for v in pod.volumes}
    pod.volumes = [*pod.volumes, *(v for v in spec.volumes if v.get("name") not in own)]
    if spec.priority_class_name and not pod.priority_class_name:
        pod.priority_class_name = spec.priority_class_name
    if rtype is MASTER_TYPE and spec.job_args and pod.containers:
        main = pod.containers[0]
        main.args = [*main.args, *job_args_argv(spec.job_args)]


def job_args_argv(job_args: dict[str, str]) -> list[str]:
    """``{"minibatch_size": "64"}`` → ``["--minibatch_size", "64"]`` (in spec order)."""
    return [part for key, value in job_args.items() for part in (f"--{key}", value)]


def elastic_policy_env(job: ElasticJob, rtype: ReplicaType) -> dict[str, str]:
    """``FLEXJOB_NPROC_PER_NODE`` / ``FLEXJOB_MAX_RESTARTS`` for a replica that trains, from
    ``spec.elasticPolicy`` (``{}`` for other replicas or when the policy leaves them unset)."""
    policy = job.spec.elastic_policy
    if policy is None or rtype not in TRAINING_TYPES:
        return {}
    env = {}
    if policy.n_proc_per_node is not None:
        env[names.ENV_NPROC_PER_NODE] = str(policy.n_proc_per_node)
    if policy.max_restarts is not None:
        env[names.ENV_MAX_RESTARTS] = str(policy.max_restarts)
    return env
