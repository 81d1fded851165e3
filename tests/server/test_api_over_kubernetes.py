"""The HTTP API over the Kubernetes platform, with the kopf operator on the emulator creating and
deleting the pods it asks for (the test plays the user; pods stay as the operator made them).

Active when the Kubernetes emulator and kopf operator fixtures exist (``tests/support`` and
``tests/operator`` from the k8s branch); skipped otherwise.
"""

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

k8s_fixtures = pytest.importorskip("tests.support.k8s_fixtures", reason="no Kubernetes emulator")
kopf_fixtures = pytest.importorskip("tests.operator.kopf_fixtures", reason="no kopf operator")
emulator_mod = pytest.importorskip("tests.support.k8s_emulator")

from flexjob.api.names import LABEL_JOB_NAME  # noqa: E402
from flexjob.server.app import create_app  # noqa: E402

k8s_emulator = k8s_fixtures.k8s_emulator
operator = kopf_fixtures.operator
wait_for = emulator_mod.wait_for
DEADLINE = 20.0


def _job(name: str, *, preemptible: bool) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "main", "image": "python:3.11"}]}}
    return {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ElasticJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "preemptible": preemptible,
            "replicaSpecs": {
                "worker": {"replicas": 1, "minReplicas": 1, "maxReplicas": 4, "template": template}
            },
        },
    }


async def _workers(op: Any, job: str) -> int:
    pods = await op.core("list_namespaced_pod", "default", label_selector=f"{LABEL_JOB_NAME}={job}")
    return len([p for p in pods.items if "-worker-" in p.metadata.name])


async def _job_id(op: Any, job: str) -> str:
    body = await op.custom("get_namespaced_custom_object", "default", "elasticjobs", job)
    return f"default.{job}.{body['metadata'].get('generation') or 1}"


@contextlib.asynccontextmanager
async def _served(op: Any, job: str, *, preemptible: bool) -> AsyncIterator[tuple[Any, str]]:
    """``job`` created and its one worker pod made by the operator: a client of the HTTP API
    over the operator's platform, and the job's replicas URL."""
    body = _job(job, preemptible=preemptible)
    await op.custom("create_namespaced_custom_object", "default", "elasticjobs", body)
    await wait_for(lambda: _has(op, job, 1), DEADLINE)
    transport = httpx.ASGITransport(app=create_app(op.platform))
    async with httpx.AsyncClient(transport=transport, base_url="http://server") as client:
        yield client, f"/v2alpha1/{await _job_id(op, job)}/replicas"


async def test_scaling_over_kubernetes_makes_the_operator_add_and_remove_pods(
    operator: Any,
) -> None:
    async with _served(operator, "elastic", preemptible=True) as (client, url):
        resp = await client.post(url, json={"replicas": 2})
        assert resp.status_code == 200, resp.text
        await wait_for(lambda: _has(operator, "elastic", 3), DEADLINE)
        resp = await client.request("DELETE", url, json={"replicas": 2})
        assert resp.status_code == 200, resp.text
        await wait_for(lambda: _has(operator, "elastic", 1), DEADLINE)


async def test_scaling_a_non_preemptible_job_over_kubernetes_is_409(operator: Any) -> None:
    async with _served(operator, "fixed", preemptible=False) as (client, url):
        resp = await client.post(url, json={"replicas": 1})
    assert resp.status_code == 409
    assert "not preemptible" in resp.json()["message"]


async def _has(op: Any, job: str, count: int) -> bool:
    return await _workers(op, job) == count
