"""Defaults, applied exactly as a mutating admission webhook would: ``apply_defaults`` is a pure
function ``ElasticJob -> ElasticJob`` (idempotent), and ``defaults_patch`` is the JSON patch
list the webhook sends back for a raw object.

The defaults (after DI Orchestrator v2, DLRover and Kubeflow): cleanPodPolicy Running,
backoffLimit 3, priority normal, preemptible false, optimizeMode single-job on a job that has
flexjob's job master (``api.master_rule``; only that master runs the optimizer, so a job
without it keeps none), the distribution
strategy from the replica types (ps → ParameterServerStrategy, else AllreduceStrategy); per
replica type: the bounds of ``api.bounds``, restartPolicy OnFailure, and a container without a
name named ``main``. Validation is not done here (``api.validate``).
"""

from typing import Any

from pydantic import ValidationError

from flexjob.api.bounds import replica_bounds
from flexjob.api.enums import (
    CleanPodPolicy,
    DistributionStrategy,
    JobPriority,
    OptimizeMode,
    ReplicaType,
    RestartPolicy,
)
from flexjob.api.job import ElasticJob, ElasticJobSpec, ReplicaSpec
from flexjob.api.master_rule import flexjob_runs_master

DEFAULT_BACKOFF_LIMIT = 3
DEFAULT_CONTAINER_NAME = "main"


def default_replica_spec(spec: ReplicaSpec) -> ReplicaSpec:
    bounds = replica_bounds(spec)
    template = spec.template
    if any(not c.name for c in template.spec.containers):
        containers = [
            c if c.name else c.model_copy(update={"name": DEFAULT_CONTAINER_NAME})
            for c in template.spec.containers
        ]
        pod = template.spec.model_copy(update={"containers": containers})
        template = template.model_copy(update={"spec": pod})
    return spec.model_copy(
        update={
            "replicas": bounds.replicas,
            "min_replicas": bounds.min,
            "max_replicas": bounds.max,
            "restart_policy": spec.restart_policy or RestartPolicy.ON_FAILURE,
            "template": template,
        }
    )


def _strategy(spec: ElasticJobSpec) -> DistributionStrategy:
    if spec.distribution_strategy is not None:
        return spec.distribution_strategy
    if ReplicaType.PS in spec.replica_specs:
        return DistributionStrategy.PARAMETER_SERVER
    return DistributionStrategy.ALLREDUCE


def _optimize_mode(job: ElasticJob) -> OptimizeMode | None:
    return OptimizeMode.SINGLE_JOB if flexjob_runs_master(job) else None


def apply_defaults(job: ElasticJob) -> ElasticJob:
    """``job`` with every default filled in; ``job`` itself is not changed."""
    spec = job.spec
    new_spec = spec.model_copy(
        update={
            "replica_specs": {t: default_replica_spec(r) for t, r in spec.replica_specs.items()},
            "clean_pod_policy": spec.clean_pod_policy or CleanPodPolicy.RUNNING,
            "backoff_limit": (
                spec.backoff_limit if spec.backoff_limit is not None else DEFAULT_BACKOFF_LIMIT
            ),
            "priority": spec.priority or JobPriority.NORMAL,
            "preemptible": spec.preemptible if spec.preemptible is not None else False,
            "optimize_mode": spec.optimize_mode or _optimize_mode(job),
            "distribution_strategy": _strategy(spec),
        }
    )
    return job.model_copy(update={"spec": new_spec}, deep=True)


def _pointer(path: list[str]) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


def _diff(old: Any, new: Any, path: list[str], ops: list[dict[str, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key, value in new.items():
            if key not in old:
                ops.append({"op": "add", "path": _pointer([*path, key]), "value": value})
            else:
                _diff(old[key], value, [*path, key], ops)
    elif old != new:
        ops.append({"op": "replace", "path": _pointer(path), "value": new})


def json_patch(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """RFC 6902 ``add``/``replace`` operations that turn ``old`` into ``new`` (keys only in
    ``old`` are left alone, as a mutating webhook leaves what it does not default)."""
    ops: list[dict[str, Any]] = []
    _diff(old, new, [], ops)
    return ops


def defaults_patch(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON patch a mutating webhook returns for the native ``ElasticJob`` dict ``raw``.

    A ``raw`` the model rejects gets no patch: the validating webhook (``api.validate``) then
    reports why, field by field."""
    try:
        job = ElasticJob.model_validate(raw)
    except ValidationError:
        return []
    return json_patch(raw, apply_defaults(job).to_wire())
