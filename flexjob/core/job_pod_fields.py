"""Job-level spec fields that end up in every replica's pod template.

For: ``render_replica`` (``core.replica_plan``). ``spec.volumes`` are shared by every replica
(a replica's own volume of the same name wins), ``spec.priorityClassName`` becomes each pod's
``priorityClassName`` unless its template names one, and ``spec.jobArgs`` (ElasticDL) are
appended to the master's main container as ``--name value`` (validation accepts them only for
a declared master with its own command, never flexjob's). No I/O.
"""

from flexjob.api import ElasticJob, ReplicaType
from flexjob.api.pod import PodTemplateSpec


def apply_job_fields(job: ElasticJob, rtype: ReplicaType, template: PodTemplateSpec) -> None:
    """Put ``job``'s job-level pod fields into ``template`` (a copy owned by the caller)."""
    spec = job.spec
    pod = template.spec
    own = {v.get("name") for v in pod.volumes}
    pod.volumes = [*pod.volumes, *(v for v in spec.volumes if v.get("name") not in own)]
    if spec.priority_class_name and not pod.priority_class_name:
        pod.priority_class_name = spec.priority_class_name
    if rtype is ReplicaType.MASTER and spec.job_args and pod.containers:
        main = pod.containers[0]
        main.args = [*main.args, *job_args_argv(spec.job_args)]


def job_args_argv(job_args: dict[str, str]) -> list[str]:
    """``{"minibatch_size": "64"}`` → ``["--minibatch_size", "64"]`` (in spec order)."""
    return [part for key, value in job_args.items() for part in (f"--{key}", value)]
