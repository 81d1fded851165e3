"""Schemathesis over the published OpenAPI schema, in process (ASGI): no input gives a 500."""

import schemathesis
from hypothesis import HealthCheck, settings

from flexjob.api import ReplicaPhase, ReplicaType
from flexjob.platform.contract import Replica
from flexjob.server.app import create_app

from .jobs import di_v1_job, elastic_job
from .memory_platform import MemoryPlatform


def _platform() -> MemoryPlatform:
    platform = MemoryPlatform()
    platform.create_job(elastic_job("mnist"))
    platform.create_job(elastic_job("fixed", preemptible=False))
    platform.create_job(di_v1_job("cartpole"))
    for i, rtype in enumerate((ReplicaType.LEARNER, ReplicaType.AGGREGATOR)):
        platform.add_replica(
            Replica(
                "default",
                "cartpole",
                f"cartpole-{rtype.value}-0",
                rtype,
                0,
                ReplicaPhase.FAILED if i else ReplicaPhase.RUNNING,
            )
        )
    return platform


schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(_platform(), di_address_wait=0))


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_request_gets_a_server_error(case: schemathesis.Case) -> None:
    response = case.call()
    assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.text}"
