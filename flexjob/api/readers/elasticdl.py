"""Reader of ElasticDL's ``ElasticAIJob``: ``jobArgs`` (``--name value`` strings) and the
Master, PS and Worker replica specs.

The ElasticDL master launches its workers itself; in flexjob the operator does, so Master
becomes the job's ``master`` replica and PS/Worker become ``ps``/``worker``. Who reads the
``jobArgs`` depends on the Master: one that names a command, or an image that is not
flexjob's (``flexjob_image``), is the job's own master, and gets them on its command line as
written (``spec.jobArgs``, appended to its container's args: its image's entrypoint reads
them). A Master without a command in flexjob's image (or none) is flexjob's master, which
takes no arguments: each is translated into flexjob's settings or refused by name
(``elasticdl_args``).

ElasticDL's pods say ``restartPolicy: Never`` because its master relaunches them, so a pod
template's ``Never`` is the replica policy ``OnFailure`` here (the operator relaunches within
``backoffLimit``); a replica spec's own ``restartPolicy`` wins. Workers are elastic between
``minReplicas`` (default 1) and ``maxReplicas`` (default ``replicas``), so the optimizer can
resize them as ElasticDL's master does.
"""

import re
from typing import Any

from pydantic import Field

from flexjob.api.base import ApiModel
from flexjob.api.enums import ReplicaType, RestartPolicy
from flexjob.api.job import ElasticJobSpec, ReplicaCount, ReplicaSpec
from flexjob.api.pod import PodTemplateSpec
from flexjob.api.problems import Problem, SpecError
from flexjob.api.readers.common import Converted, ForeignObject, Reader, native_job, parse
from flexjob.api.readers.elasticdl_args import translate

#: The image name (last path segment, before the tag) of flexjob's own image.
FLEXJOB_IMAGE_NAME = "flexjob"

GROUP = "elasticdl.org"
VERSIONS = (f"{GROUP}/v1", f"{GROUP}/v1alpha1")
#: One job argument: ``--name value`` (the name as in ElasticDL's CRD, the value one token or
#: more on one line).
JOB_ARG = re.compile(r"^--([a-z0-9_]+)\s(\S(?:.*\S)?)$")


#: The ElasticAIJob spec field of each replica type.
ALIASES = {ReplicaType.MASTER: "Master", ReplicaType.PS: "PS", ReplicaType.WORKER: "Worker"}


class EdlReplicaSpec(ApiModel):
    replicas: ReplicaCount | None = None
    #: flexjob's bounds (not ElasticDL's): the Worker's default to 1 and ``replicas``.
    min_replicas: ReplicaCount | None = None
    max_replicas: ReplicaCount | None = None
    restart_policy: RestartPolicy | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class ElasticAIJobSpec(ApiModel):
    job_args: list[str] = Field(default_factory=list)
    master: EdlReplicaSpec | None = Field(default=None, alias="Master")
    ps: EdlReplicaSpec | None = Field(default=None, alias="PS")
    worker: EdlReplicaSpec | None = Field(default=None, alias="Worker")


def parse_job_args(args: list[str]) -> dict[str, str]:
    """``["--minibatch_size 64"]`` → ``{"minibatch_size": "64"}``; every bad or repeated
    argument is a ``Problem`` at ``spec.jobArgs[i]``."""
    out: dict[str, str] = {}
    problems = []
    for i, arg in enumerate(args):
        match = JOB_ARG.match(arg)
        if match is None:
            problems.append(
                Problem(
                    f"spec.jobArgs[{i}]",
                    arg,
                    f"{arg!r} is not '--name value' (name: lower-case letters, digits, '_')",
                )
            )
        elif match[1] in out:
            problems.append(Problem(f"spec.jobArgs[{i}]", arg, f"--{match[1]} is given twice"))
        else:
            out[match[1]] = match[2]
    if problems:
        raise SpecError(problems)
    return out


def flexjob_image(image: str | None) -> bool:
    """``image`` is flexjob's own (``flexjob``, ``flexjob:latest``, ``registry/x/flexjob:1``)
    or absent: a command-less Master in it is flexjob's master."""
    if not image:
        return True
    name = image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0]
    return name == FLEXJOB_IMAGE_NAME


def own_master(master: EdlReplicaSpec | None) -> bool:
    """The job brings its own master: a Master whose main container names a command, or an
    image other than flexjob's."""
    containers = master.template.spec.containers if master is not None else []
    if not containers:
        return False
    return bool(containers[0].command) or not flexjob_image(containers[0].image)


def _replica(rtype: ReplicaType, spec: EdlReplicaSpec) -> ReplicaSpec:
    """The native spec: a pod template's ``Never`` means "the master relaunches" (module
    doc), another pod policy is the replica's unless the replica spec names one."""
    policy = spec.restart_policy
    pod_policy = spec.template.spec.restart_policy
    if policy is None and pod_policy == RestartPolicy.NEVER:
        policy = RestartPolicy.ON_FAILURE
    elif policy is None and pod_policy in {str(p) for p in RestartPolicy}:
        policy = RestartPolicy(pod_policy)
    low, high = spec.min_replicas, spec.max_replicas
    if rtype is ReplicaType.WORKER:
        low = 1 if low is None else low
        high = spec.replicas if high is None else high
    return ReplicaSpec(
        replicas=spec.replicas,
        min_replicas=low,
        max_replicas=high,
        restart_policy=policy,
        template=spec.template,
    )


def _check_worker(worker: EdlReplicaSpec | None) -> None:
    if worker is not None and worker.replicas == 0:
        raise SpecError(
            [Problem("spec.Worker.replicas", 0, "a job needs at least 1 Worker replica, got 0")]
        )


def convert(raw: dict[str, Any], companions: list[dict[str, Any]]) -> Converted:
    job = parse(ForeignObject[ElasticAIJobSpec], raw)
    _check_worker(job.spec.worker)
    roles = {
        ReplicaType.MASTER: job.spec.master,
        ReplicaType.PS: job.spec.ps,
        ReplicaType.WORKER: job.spec.worker,
    }
    args = parse_job_args(job.spec.job_args)
    index = {key: i for i, key in enumerate(args)}
    settings: dict[str, Any] = {}
    if not own_master(job.spec.master):
        settings, problems = translate(args, index)
        if problems:
            raise SpecError(problems)
        args = {}
    spec = ElasticJobSpec.model_validate(
        {
            **settings,
            "replicaSpecs": {
                t: _replica(t, r).to_wire() for t, r in roles.items() if r is not None
            },
            "jobArgs": args,
        }
    )
    paths = {f"spec.replicaSpecs.{t}": f"spec.{ALIASES[t]}" for t in roles}
    paths.update({f"spec.jobArgs.{k}": f"spec.jobArgs[{i}]" for i, k in enumerate(spec.job_args)})
    return native_job(job.metadata, spec, paths)


READERS = (Reader("ElasticDL ElasticAIJob", "ElasticAIJob", VERSIONS, convert),)
