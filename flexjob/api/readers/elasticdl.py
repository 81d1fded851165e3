"""Reader of ElasticDL's ``ElasticAIJob``: ``jobArgs`` (``--name value`` strings) and the
Master, PS and Worker replica specs.

The ElasticDL master launches its workers itself; in flexjob the operator does, so Master
becomes the job's ``master`` replica and PS/Worker become ``ps``/``worker``.
"""

import re
from typing import Any, Literal

from pydantic import Field

from flexjob.api.base import ApiModel
from flexjob.api.enums import ReplicaType, RestartPolicy
from flexjob.api.job import ElasticJobSpec, ReplicaCount, ReplicaSpec
from flexjob.api.pod import PodTemplateSpec
from flexjob.api.problems import Problem, SpecError
from flexjob.api.readers.common import Converted, ForeignObject, Reader, native_job, parse

GROUP = "elasticdl.org"
VERSIONS = (f"{GROUP}/v1", f"{GROUP}/v1alpha1")
#: One job argument: ``--name value`` (the name as in ElasticDL's CRD, the value one token or
#: more on one line).
JOB_ARG = re.compile(r"^--([a-z0-9_]+)\s(\S(?:.*\S)?)$")


#: The ElasticAIJob spec field of each replica type.
ALIASES = {ReplicaType.MASTER: "Master", ReplicaType.PS: "PS", ReplicaType.WORKER: "Worker"}


class EdlReplicaSpec(ApiModel):
    replicas: ReplicaCount | None = None
    restart_policy: RestartPolicy | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class ElasticAIJobSpec(ApiModel):
    job_args: list[str] = Field(default_factory=list)
    master: EdlReplicaSpec | None = Field(default=None, alias="Master")
    ps: EdlReplicaSpec | None = Field(default=None, alias="PS")
    worker: EdlReplicaSpec | None = Field(default=None, alias="Worker")


class ElasticAIJob(ForeignObject):
    api_version: Literal["elasticdl.org/v1", "elasticdl.org/v1alpha1"]
    kind: Literal["ElasticAIJob"]
    spec: ElasticAIJobSpec


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


def _replica(spec: EdlReplicaSpec) -> ReplicaSpec:
    """The native spec; ElasticDL writes the restart policy in the pod template, so a
    template's ``restartPolicy`` is the replica's unless the replica spec names one."""
    policy = spec.restart_policy
    pod_policy = spec.template.spec.restart_policy
    if policy is None and pod_policy in {str(p) for p in RestartPolicy}:
        policy = RestartPolicy(pod_policy)
    return ReplicaSpec(replicas=spec.replicas, restart_policy=policy, template=spec.template)


def _check_worker(worker: EdlReplicaSpec | None) -> None:
    if worker is not None and worker.replicas == 0:
        raise SpecError(
            [Problem("spec.Worker.replicas", 0, "a job needs at least 1 Worker replica, got 0")]
        )


def convert(raw: dict[str, Any], companions: list[dict[str, Any]]) -> Converted:
    job = parse(ElasticAIJob, raw)
    _check_worker(job.spec.worker)
    roles = {
        ReplicaType.MASTER: job.spec.master,
        ReplicaType.PS: job.spec.ps,
        ReplicaType.WORKER: job.spec.worker,
    }
    spec = ElasticJobSpec(
        replica_specs={t: _replica(r) for t, r in roles.items() if r is not None},
        job_args=parse_job_args(job.spec.job_args),
    )
    paths = {f"spec.replicaSpecs.{t}": f"spec.{ALIASES[t]}" for t in roles}
    paths.update({f"spec.jobArgs.{k}": f"spec.jobArgs[{i}]" for i, k in enumerate(spec.job_args)})
    return native_job(job.metadata, spec, paths)


READERS = (Reader("ElasticDL ElasticAIJob", "ElasticAIJob", VERSIONS, convert),)
