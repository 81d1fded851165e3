"""Logic learners of a DI v1 job: the one rule for learners with more than one GPU.

A learner replica whose template asks for more than one GPU (or that the coordinator asks for
with ``gpus`` > 1) is a *logic learner*: it runs one learner process per GPU, on its port and
the ports after it (``gpu_addresses``), and an aggregator replica stands in front of it —
aggregator ``i`` serves learner ``i`` and is what the coordinator talks to. The aggregator's
recipe is the job's own ``AggregatorConfig`` (given beside the DIJob at submit) or else the
cluster's (``flexjob apply`` on the local platform, the CRD on Kubernetes): ``with_aggregator``
gives a DI-driven job the cluster's template as an on-request aggregator spec, for the operator
(which creates aggregators) and the server (which counts them) alike.

Not for: where AggregatorConfigs are stored (``platform``) or the HTTP shapes (``server``).
"""

from typing import Any

from flexjob.api import ElasticJob
from flexjob.api.pod import PodTemplateSpec
from flexjob.api.quantity import cpu_cores
from flexjob.api.readers.dijob import RoleSpec, aggregator_config, on_request_spec
from flexjob.api.roles import FRONT_TYPE, FRONTED_TYPE, driving_type
from flexjob.core.operator.replica_resources import GPU_RESOURCE, replica_asks, replica_resources


def learner_gpus(job: ElasticJob, index: int | None = None) -> int:
    """GPUs a learner replica of ``job`` asks for: learner ``index``'s own (a create request's
    ``gpus``, ``core.operator.replica_resources.replica_resources``) when it has them, else
    its template's (``replica_asks``); 0 when none."""
    spec = job.spec.replica_specs.get(FRONTED_TYPE)
    if spec is None:
        return 0
    own = (
        replica_resources(job.status, FRONTED_TYPE, index)
        if job.status and index is not None
        else None
    )
    if own is not None and own.gpu is not None:
        return own.gpu
    value = replica_asks(spec.template).get(GPU_RESOURCE, 0)
    try:
        return int(cpu_cores(value))
    except ValueError:
        return 0


def is_logic_learner(job: ElasticJob, requested_gpus: int = 0) -> bool:
    """Whether a learner of ``job`` asked for with ``requested_gpus`` needs an aggregator."""
    return max(requested_gpus, learner_gpus(job)) > 1


def gpu_addresses(address: str, gpus: int) -> list[str]:
    """The addresses of a learner replica's processes: one per GPU, on its port and the next
    ``gpus - 1`` ports (one address for a learner with at most one GPU)."""
    host, _, port = address.rpartition(":")
    return [f"{host}:{int(port) + k}" for k in range(max(gpus, 1))]


def aggregator_template(configs: list[dict[str, Any]]) -> PodTemplateSpec | None:
    """The aggregator template of the cluster's AggregatorConfigs: the first by name."""
    if not configs:
        return None
    first = min(configs, key=lambda c: str((c.get("metadata") or {}).get("name", "")))
    return aggregator_config(first).spec.aggregator.template


def needs_cluster_aggregator(job: ElasticJob) -> bool:
    """Whether ``job`` takes its aggregator from the cluster: DI-driven, with no aggregator
    spec (no AggregatorConfig given beside it)."""
    specs = job.spec.replica_specs
    return FRONT_TYPE not in specs and driving_type(specs) is not None


def with_aggregator(job: ElasticJob, template: PodTemplateSpec | None) -> ElasticJob:
    """``job`` as the operator and the server see it: a job that takes its aggregator from the
    cluster gets an on-request aggregator spec from ``template`` (the cluster's
    AggregatorConfig); any other job, or no template, is returned unchanged."""
    if template is None or not needs_cluster_aggregator(job):
        return job
    effective = job.model_copy(deep=True)
    role = RoleSpec(template=template.model_copy(deep=True))
    effective.spec.replica_specs[FRONT_TYPE] = on_request_spec(role)
    return effective
