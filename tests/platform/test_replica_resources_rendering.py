"""Resources a ScalePlan gave a replica, as each platform hands them to what it runs."""

import pytest

from flexjob.api import ReplicaType, ResourceSpec, names
from flexjob.core.operator.replica_plan import render_replica
from flexjob.platform.kubernetes.bodies import pod_body
from flexjob.platform.local.runtime import resource_env
from tests.core.operator.reconcile_sim import make_job


def test_kubernetes_pod_requests_and_limits_carry_plan_resources() -> None:
    request = render_replica(
        make_job(),
        ReplicaType.WORKER,
        1,
        master_address="m:1",
        own_address=None,
        node=None,
        resources=ResourceSpec(cpu=0.5, memory=1536),
    )
    container = pod_body(request, None)["spec"]["containers"][0]
    wanted = {"cpu": "0.5", "memory": "1536Mi"}
    assert container["resources"] == {"requests": wanted, "limits": wanted}


@pytest.mark.parametrize(
    ("requests", "env"),
    [
        ({"cpu": "500m", "memory": "2Gi"}, {names.ENV_CPU: "0.5", names.ENV_MEMORY_MIB: "2048"}),
        (
            {"memory": "1536Mi", "nvidia.com/gpu": "2"},
            {names.ENV_MEMORY_MIB: "1536", names.ENV_GPU: "2"},
        ),
        ({}, {}),
        ({"memory": "lots"}, {}),
    ],
    ids=["cpu-and-gi", "mi-and-gpu", "none", "invalid-ignored"],
)
def test_local_process_sees_its_resources_in_env(
    requests: dict[str, str], env: dict[str, str]
) -> None:
    assert resource_env(requests) == env
