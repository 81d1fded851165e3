"""The admission webhooks, called as the API server would: AdmissionReview POSTs to kopf."""

import base64
import json
import uuid
from typing import Any

import aiohttp
import jsonpatch  # type: ignore[import-untyped]

from flexjob.operator.kubernetes.admission import MUTATE_JOB, VALIDATE_JOB, VALIDATE_PLAN
from tests.operator.kopf_fixtures import OperatorHarness
from tests.support.k8s_emulator import wait_for


def review(plural: str, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "flexjob.dev", "version": "v1alpha1", "kind": kind},
            "resource": {"group": "flexjob.dev", "version": "v1alpha1", "resource": plural},
            "operation": "CREATE",
            "namespace": "default",
            "name": obj["metadata"]["name"],
            "object": obj,
            "userInfo": {"username": "tester"},
            "dryRun": False,
            "options": {},
        },
    }


def sparse_job(**spec: Any) -> dict[str, Any]:
    template = {
        "spec": {"containers": [{"image": "python:3.11", "command": ["python", "train.py"]}]}
    }
    return {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ElasticJob",
        "metadata": {"name": "sparse", "namespace": "default"},
        "spec": {"replicaSpecs": {"worker": {"replicas": 2, "template": template}}, **spec},
    }


async def post(op: OperatorHarness, webhook: str, body: dict[str, Any]) -> dict[str, Any]:
    async def answer() -> dict[str, Any] | None:
        try:
            url = f"{op.webhook_url}/{webhook}"
            async with aiohttp.ClientSession() as session, session.post(url, json=body) as resp:
                return await resp.json()  # type: ignore[no-any-return]
        except aiohttp.ClientConnectionError:
            return None  # the webhook server is still starting

    response: dict[str, Any] = await wait_for(answer, 10)
    return response["response"]  # type: ignore[no-any-return]


async def test_validating_webhook_rejects_a_bad_spec_naming_the_field(
    operator: OperatorHarness,
) -> None:
    bad = sparse_job(cleanPodPolicy="Sometimes")
    answer = await post(operator, VALIDATE_JOB, review("elasticjobs", "ElasticJob", bad))
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 422
    assert "spec.cleanPodPolicy" in answer["status"]["message"]
    assert "'Sometimes' is not one of" in answer["status"]["message"]


def update_review(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    body = review("elasticjobs", "ElasticJob", new)
    body["request"].update(operation="UPDATE", oldObject=old)
    return body


async def test_an_update_may_keep_a_field_a_later_rule_refuses_but_not_change_it(
    operator: OperatorHarness,
) -> None:
    """A job stored when defaulting set optimizeMode single-job on every job (now refused on a
    job without flexjob's master) can still be scaled; a changed or new bad field cannot."""
    stored = sparse_job(optimizeMode="single-job")
    created = await post(operator, VALIDATE_JOB, review("elasticjobs", "ElasticJob", stored))
    assert created["allowed"] is False and "spec.optimizeMode" in created["status"]["message"]

    scaled = sparse_job(optimizeMode="single-job")
    scaled["spec"]["replicaSpecs"]["worker"]["replicas"] = 3
    answer = await post(operator, VALIDATE_JOB, update_review(stored, scaled))
    assert answer["allowed"] is True

    changed = sparse_job(optimizeMode="cluster")
    answer = await post(operator, VALIDATE_JOB, update_review(stored, changed))
    assert answer["allowed"] is False and "spec.optimizeMode" in answer["status"]["message"]

    worse = sparse_job(optimizeMode="single-job", cleanPodPolicy="Sometimes")
    answer = await post(operator, VALIDATE_JOB, update_review(stored, worse))
    assert answer["allowed"] is False
    assert "spec.cleanPodPolicy" in answer["status"]["message"]
    assert "spec.optimizeMode" not in answer["status"]["message"]


async def test_validating_webhook_admits_a_good_spec(operator: OperatorHarness) -> None:
    answer = await post(operator, VALIDATE_JOB, review("elasticjobs", "ElasticJob", sparse_job()))
    assert answer["allowed"] is True


async def test_validating_webhook_rejects_a_scale_plan_without_owner(
    operator: OperatorHarness,
) -> None:
    plan = {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ScalePlan",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"replicaResourceSpecs": {"worker": {"replicas": 2}}},
    }
    answer = await post(operator, VALIDATE_PLAN, review("scaleplans", "ScalePlan", plan))
    assert answer["allowed"] is False
    assert "spec.ownerJob" in answer["status"]["message"]


async def test_mutating_webhook_fills_defaults_of_a_sparse_spec(operator: OperatorHarness) -> None:
    job = sparse_job()
    answer = await post(operator, MUTATE_JOB, review("elasticjobs", "ElasticJob", job))
    assert answer["allowed"] is True
    assert answer["patchType"] == "JSONPatch"
    patched = jsonpatch.apply_patch(job, json.loads(base64.b64decode(answer["patch"])))
    spec = patched["spec"]
    assert spec["cleanPodPolicy"] == "Running"
    assert spec["backoffLimit"] == 3
    worker = spec["replicaSpecs"]["worker"]
    assert (worker["minReplicas"], worker["maxReplicas"], worker["restartPolicy"]) == (
        2,
        2,
        "OnFailure",
    )
    assert worker["template"]["spec"]["containers"][0]["name"] == "main"
