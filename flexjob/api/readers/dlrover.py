"""Reader of DLRover's ``ElasticJob`` (group ``elastic.iml.github.io``).

Its shape is close to flexjob's own: ``replicaSpecs`` keyed by lower-case replica type, with
DLRover's ``restartCount``, ``autoScale``, ``restartTimeout`` and ``priority`` per replica, and
``resourceLimits``, ``optimizeMode``, ``brainService`` and ``envs`` per job. ``envs`` values may
be plain strings or Kubernetes ``EnvVar`` objects with a literal ``value``. Like DLRover, a
job gets a job master: ``enableDynamicSharding`` defaults to true, which gives it flexjob's.
The DLRover fields flexjob does not act on are rejected by ``api.unsupported``.
"""

from typing import Any

from pydantic import Field

from flexjob.api.base import ApiModel
from flexjob.api.enums import (
    DistributionStrategy,
    JobPriority,
    OptimizeMode,
    ReplicaType,
    RestartPolicy,
)
from flexjob.api.job import ElasticJobSpec, NonNegative, ReplicaCount, ReplicaSpec
from flexjob.api.pod import EnvVar, PodTemplateSpec, Quantity
from flexjob.api.problems import Problem, SpecError
from flexjob.api.readers.common import Converted, ForeignObject, Reader, native_job, parse

GROUP = "elastic.iml.github.io"
VERSIONS = (f"{GROUP}/v1alpha1",)


class DlroverReplicaSpec(ApiModel):
    replicas: ReplicaCount | None = None
    restart_policy: RestartPolicy | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    priority: JobPriority | None = None
    restart_count: NonNegative | None = None
    restart_timeout: NonNegative | None = None
    auto_scale: bool | None = None


class DlroverJobSpec(ApiModel):
    distribution_strategy: DistributionStrategy | None = None
    resource_limits: dict[str, Quantity] | None = None
    optimize_mode: OptimizeMode | None = None
    brain_service: str | None = None
    enable_elastic_scheduling: bool | None = None
    enable_dynamic_sharding: bool | None = None
    suspend: bool | None = None
    replica_specs: dict[ReplicaType, DlroverReplicaSpec]
    envs: dict[str, str | EnvVar] = Field(default_factory=dict)


def _envs(envs: dict[str, str | EnvVar]) -> dict[str, str]:
    out: dict[str, str] = {}
    problems = []
    for key, env in envs.items():
        if isinstance(env, str):
            out[key] = env
        elif env.name != key or env.value is None or env.model_extra:
            problems.append(
                Problem(
                    f"spec.envs.{key}",
                    env.to_wire(),
                    f"an env entry is a string or {{name: {key}, value: ...}}",
                )
            )
        else:
            out[key] = env.value
    if problems:
        raise SpecError(problems)
    return out


def _replica(spec: DlroverReplicaSpec) -> ReplicaSpec:
    return ReplicaSpec.model_validate(spec.model_dump(exclude_none=True))


def convert(raw: dict[str, Any], companions: list[dict[str, Any]]) -> Converted:
    job = parse(ForeignObject[DlroverJobSpec], raw)
    source = job.spec
    spec = ElasticJobSpec(
        replica_specs={t: _replica(r) for t, r in source.replica_specs.items()},
        distribution_strategy=source.distribution_strategy,
        resource_limits=source.resource_limits,
        optimize_mode=source.optimize_mode,
        brain_service=source.brain_service,
        enable_elastic_scheduling=source.enable_elastic_scheduling,
        # DLRover runs a job master for every ElasticJob (it serves shards and rendezvous);
        # flexjob adds its implicit master to jobs that use dynamic sharding
        # (core.operator.job_master)
        enable_dynamic_sharding=source.enable_dynamic_sharding is not False,
        suspend=source.suspend,
        envs=_envs(source.envs),
    )
    return native_job(job.metadata, spec)


READERS = (Reader("DLRover ElasticJob", "ElasticJob", VERSIONS, convert),)
