"""Spec fields flexjob keeps in its model (other formats carry them) but does not act on.

For: rejecting them at validation (``api.validate``) with a message naming the field and what
to do instead, so a field is never accepted and then silently dropped. When one of them gets
implemented, remove it from these tables and test what it does. No I/O.
"""

from collections.abc import Mapping
from typing import Any

from flexjob.api.problems import Problem, join_path

_NOT_SUPPORTED = "flexjob does not support"

#: Job-level fields (camelCase) → what to do instead.
JOB_FIELDS: Mapping[str, str] = {
    "group": "DI Orchestrator job groups; remove spec.group (each job is scheduled alone)",
    "resourceLimits": (
        "a job-wide resource cap; remove spec.resourceLimits and bound the job with each "
        "replica type's maxReplicas and its containers' resources"
    ),
    "schedulingPolicy": (
        "gang-scheduling settings (minAvailable, queue, priorityClass); remove it (replicas are "
        "created as the job asks, and spec.priorityClassName reaches every pod)"
    ),
    "enableElasticScheduling": (
        "DLRover's elastic-scheduling switch; remove it (spec.optimizeMode: manual turns the "
        "optimizer's scaling off)"
    ),
}

#: ``spec.elasticPolicy`` fields (camelCase) → what to do instead. rdzvBackend, nProcPerNode
#: and maxRestarts act (``core.operator.job_master``,
# ``core.operator.job_pod_fields.elastic_policy_env``).
POLICY_FIELDS: Mapping[str, str] = {
    "rdzvHost": "a rendezvous host; remove it (the job master is the rendezvous: $FLEXJOB_MASTER)",
    "rdzvPort": "a rendezvous port; remove it (the job master is the rendezvous: $FLEXJOB_MASTER)",
    "rdzvId": "a rendezvous id; remove it (the job's name is its rendezvous id)",
    "rdzvConf": (
        "rendezvous settings in the spec; remove them and give the agent's command "
        "--rdzv-conf join_timeout=S"
    ),
    "standalone": "a standalone rendezvous per pod; remove it",
    "metrics": ("HPA metrics; remove them (the optimizer scales by throughput: spec.optimizeMode)"),
}

#: Per-replica-type fields (camelCase) → what to do instead.
REPLICA_FIELDS: Mapping[str, str] = {
    "restartCount": "a per-replica restart count; use spec.backoffLimit (restarts per job)",
    "restartTimeout": "a relaunch timeout; remove it (a replacement is awaited without a limit)",
    "autoScale": (
        "turning auto-scaling on or off per replica type; flexjob's optimizer scales the job's "
        "scaling target within minReplicas..maxReplicas (spec.optimizeMode: manual turns it off)"
    ),
    "priority": "a priority per replica type; use the job's spec.priority",
}


def unsupported_fields(spec: Mapping[str, Any]) -> list[Problem]:
    """One problem per field of ``spec`` (a job spec wire dict) that flexjob would drop."""
    problems = [
        Problem(f"spec.{key}", spec[key], f"{_NOT_SUPPORTED} {hint}")
        for key, hint in JOB_FIELDS.items()
        if spec.get(key) is not None
    ]
    policy = spec.get("elasticPolicy")
    if isinstance(policy, Mapping):
        problems += [
            Problem(f"spec.elasticPolicy.{key}", policy[key], f"{_NOT_SUPPORTED} {hint}")
            for key, hint in POLICY_FIELDS.items()
            if policy.get(key) is not None
        ]
    replica_specs = spec.get("replicaSpecs")
    if isinstance(replica_specs, Mapping):
        for rtype, rspec in replica_specs.items():
            if not isinstance(rspec, Mapping):
                continue
            problems += [
                Problem(f"spec.replicaSpecs.{rtype}.{key}", rspec[key], f"{_NOT_SUPPORTED} {hint}")
                for key, hint in REPLICA_FIELDS.items()
                if rspec.get(key) is not None
            ]
    return problems


def unsupported_plan_fields(spec: Mapping[str, Any]) -> list[Problem]:
    """One problem per ScalePlan field (a ScalePlan spec wire dict) that flexjob would drop:
    a pod's ``rankIndex`` (ranks follow the rendezvous' join order) and a created pod's
    ``resource`` (a new replica gets its type's resources)."""
    problems = []
    for part in ("createPods", "removePods", "migratePods"):
        pods = spec.get(part)
        if not isinstance(pods, list):
            continue
        for i, pod in enumerate(pods):
            if not isinstance(pod, Mapping):
                continue
            path = join_path(f"spec.{part}", i)
            if pod.get("rankIndex") is not None:
                problems.append(
                    Problem(
                        f"{path}.rankIndex",
                        pod["rankIndex"],
                        f"{_NOT_SUPPORTED} choosing a pod's rank; remove it (ranks follow the "
                        "order nodes join the rendezvous)",
                    )
                )
            if part == "createPods" and pod.get("resource"):
                problems.append(
                    Problem(
                        f"{path}.resource",
                        pod["resource"],
                        f"{_NOT_SUPPORTED} resources of one created pod; set "
                        "spec.replicaResourceSpecs.<type>.resource (every new replica of the "
                        "type gets it), or migratePods for an existing one",
                    )
                )
    return problems
