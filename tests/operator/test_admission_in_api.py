"""Admission as on a cluster: the emulator calls the operator's webhooks, registered by the
webhook configurations ``flexjob manifests`` generates, on every create and update."""

import json
from typing import Any

import pytest
from kubernetes.client import CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from tests.operator.kopf_fixtures import OperatorHarness, install_webhooks
from tests.operator.test_admission_webhooks import sparse_job
from tests.support.k8s_emulator import wait_for
from tests.support.k8s_fixtures import in_thread


@pytest.fixture
async def webhooks(operator: OperatorHarness) -> OperatorHarness:
    return await install_webhooks(operator)


async def _create(op: OperatorHarness, plural: str, body: dict[str, Any]) -> dict[str, Any]:
    api = CustomObjectsApi(op.client)
    fn = api.create_namespaced_custom_object

    async def created() -> dict[str, Any] | None:
        try:
            return await in_thread(fn, "flexjob.dev", "v1alpha1", "default", plural, body)  # type: ignore[no-any-return]
        except ApiException as exc:
            if exc.status == 500 and "failed calling webhook" in str(exc.body):
                return None  # the webhook server is still starting
            raise

    result: dict[str, Any] = await wait_for(created, 10)
    return result


async def test_creating_a_bad_job_is_refused_naming_the_field(webhooks: OperatorHarness) -> None:
    with pytest.raises(ApiException) as refused:
        await _create(webhooks, "elasticjobs", sparse_job(cleanPodPolicy="Sometimes"))
    assert refused.value.status == 422
    message = json.loads(refused.value.body)["message"]
    assert "validate-elasticjob.flexjob.dev" in message
    assert "spec.cleanPodPolicy" in message
    assert not webhooks.emulator.store.select(
        webhooks.emulator.kind("flexjob.dev", "v1alpha1", "elasticjobs"), None
    )


async def test_a_sparse_job_is_stored_with_its_defaults(webhooks: OperatorHarness) -> None:
    created = await _create(webhooks, "elasticjobs", sparse_job())
    spec = created["spec"]
    assert (spec["cleanPodPolicy"], spec["backoffLimit"]) == ("Running", 3)
    worker = spec["replicaSpecs"]["worker"]
    assert (worker["minReplicas"], worker["maxReplicas"], worker["restartPolicy"]) == (
        2,
        2,
        "OnFailure",
    )


async def test_a_scale_plan_without_owner_is_refused(webhooks: OperatorHarness) -> None:
    plan = {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ScalePlan",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"replicaResourceSpecs": {"worker": {"replicas": 2}}},
    }
    with pytest.raises(ApiException) as refused:
        await _create(webhooks, "scaleplans", plan)
    assert "spec.ownerJob" in json.loads(refused.value.body)["message"]


async def test_an_update_that_breaks_a_job_is_refused(webhooks: OperatorHarness) -> None:
    await _create(webhooks, "elasticjobs", sparse_job())
    api = CustomObjectsApi(webhooks.client)
    patch = {"spec": {"cleanPodPolicy": "Sometimes"}}
    with pytest.raises(ApiException) as refused:
        await in_thread(
            api.patch_namespaced_custom_object,
            "flexjob.dev",
            "v1alpha1",
            "default",
            "elasticjobs",
            "sparse",
            patch,
        )
    assert "spec.cleanPodPolicy" in json.loads(refused.value.body)["message"]
