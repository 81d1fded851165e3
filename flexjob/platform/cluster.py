"""A job as the operator and the server see it once the cluster's objects are added: a DI v1
job without its own ``AggregatorConfig`` gets the cluster's (``core.operator.logic_learners``), read
from a platform that keeps cluster objects (``ClusterObjectStore``). One function, so that the
operator (which creates aggregators) and the server (which counts them) agree."""

from flexjob.api import ElasticJob
from flexjob.api.readers.dijob import KIND_AGGREGATOR_CONFIG
from flexjob.core.operator.logic_learners import (
    aggregator_template,
    needs_cluster_aggregator,
    with_aggregator,
)
from flexjob.platform.contract import ClusterObjectStore


def with_cluster_objects(platform: object, job: ElasticJob) -> ElasticJob:
    """``job`` with the cluster's aggregator when it takes one; ``job`` itself otherwise (also
    on a platform that keeps no cluster objects)."""
    if not needs_cluster_aggregator(job) or not isinstance(platform, ClusterObjectStore):
        return job
    configs = platform.list_cluster_objects(KIND_AGGREGATOR_CONFIG)
    return with_aggregator(job, aggregator_template(configs))
