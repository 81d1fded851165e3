"""How the kopf operator creates a job's pods, as a user sees it on the emulator: a template the
API refuses costs one failed create and a FailedCreate Warning on the job (the slow-start window
sends nothing more after the first failure), no pod is ever created twice (a pass sees the
pods the pass before it created, whether or not their watch events came), and a job deleted
while its creates are in flight keeps no pod (its release waits for them, nothing more is
sent)."""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp.web

from flexjob.api.names import LABEL_JOB_NAME
from flexjob.core.operator.actions import EventType
from flexjob.platform.contract import Event
from flexjob.platform.ports import free_port
from tests.operator.kopf_fixtures import running_operator
from tests.support.k8s_emulator import K8sEmulator, wait_for
from tests.support.k8s_fixtures import in_thread

DEADLINE = 30.0
DENIAL = "image registry.invalid/train is not allowed in this cluster"


class PodPolicy:
    """A validating admission webhook for pod creates (a cluster's policy engine): it records
    every pod it reviews and refuses them while ``deny`` is set."""

    def __init__(self) -> None:
        self.deny = False
        self.reviewed: list[str] = []
        #: While set and not yet released, every review waits for it (creates stay in flight).
        self.hold: asyncio.Event | None = None

    async def review(self, request: aiohttp.web.Request) -> aiohttp.web.Response:
        body = await request.json()
        pod = body["request"]["object"]
        self.reviewed.append(pod["metadata"]["name"])
        if self.hold is not None:
            await self.hold.wait()
        answer: dict[str, Any] = {"uid": body["request"]["uid"], "allowed": not self.deny}
        if self.deny:
            answer["status"] = {"code": 403, "reason": "Forbidden", "message": DENIAL}
        return aiohttp.web.json_response({"response": answer})


@contextlib.asynccontextmanager
async def pod_policy(emulator: K8sEmulator) -> AsyncIterator[PodPolicy]:
    policy = PodPolicy()
    app = aiohttp.web.Application()
    app.router.add_post("/pods", policy.review)
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await aiohttp.web.TCPSite(runner, "127.0.0.1", port).start()
    hook = {
        "name": "pods.policy.example.com",
        "clientConfig": {"url": f"http://127.0.0.1:{port}/pods"},
        "rules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "operations": ["CREATE"],
            }
        ],
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "pod-policy"},
        "webhooks": [hook],
    }
    kind = emulator.kind("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")
    emulator.store.create(kind, None, config)
    try:
        yield policy
    finally:
        await runner.cleanup()


def job_body(name: str, workers: int) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "main", "image": "registry.invalid/train"}]}}
    return {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ElasticJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicaSpecs": {"worker": {"replicas": workers, "template": template}}},
    }


async def test_a_refused_template_fails_one_create_and_says_why_on_the_job(
    k8s_emulator: K8sEmulator,
) -> None:
    async with (
        pod_policy(k8s_emulator) as policy,
        running_operator(k8s_emulator, parallel=16) as op,
    ):
        policy.deny = True
        await op.custom(
            "create_namespaced_custom_object", "default", "elasticjobs", job_body("bad", 12)
        )

        async def warned() -> list[Event]:
            events = await in_thread(op.platform.list_events, "default", "bad")
            return [e for e in events if e.reason == "FailedCreate"]

        failures = await wait_for(warned, DEADLINE)
        assert failures[0].type is EventType.WARNING
        assert DENIAL in failures[0].message and "bad-worker-0" in failures[0].message
        # Every try (the first pass and its retries) stopped at the first batch: one pod.
        assert set(policy.reviewed) == {"bad-worker-0"}
        assert await in_thread(op.platform.list_replicas, "default", "bad") == []

        policy.deny = False  # the cluster's policy is fixed: the retry creates every pod

        async def all_created() -> bool:
            return len(await in_thread(op.platform.list_replicas, "default", "bad")) == 12

        assert await wait_for(all_created, DEADLINE)


async def test_no_pod_is_created_twice(k8s_emulator: K8sEmulator) -> None:
    async with (
        pod_policy(k8s_emulator) as policy,
        running_operator(k8s_emulator, parallel=16, workers=4) as op,
    ):
        for name in ("one", "two", "three"):
            await op.custom(
                "create_namespaced_custom_object", "default", "elasticjobs", job_body(name, 20)
            )

        async def all_created() -> bool:
            pods = await op.core("list_namespaced_pod", "default", label_selector=LABEL_JOB_NAME)
            return len(pods.items) == 60

        assert await wait_for(all_created, DEADLINE)
        await op.queue.wait_idle(DEADLINE)
        assert len(policy.reviewed) == 60
        assert sorted(policy.reviewed) == sorted(set(policy.reviewed))


async def test_a_job_deleted_mid_create_keeps_no_pod(k8s_emulator: K8sEmulator) -> None:
    async with (
        pod_policy(k8s_emulator) as policy,
        running_operator(k8s_emulator, parallel=16) as op,
    ):
        policy.hold = asyncio.Event()
        await op.custom(
            "create_namespaced_custom_object", "default", "elasticjobs", job_body("gone", 12)
        )
        await wait_for(lambda: policy.reviewed, DEADLINE)  # its first create is in flight
        await op.custom("delete_namespaced_custom_object", "default", "elasticjobs", "gone")
        dispatcher = op.queue.dispatcher
        assert dispatcher is not None
        await wait_for(lambda: dispatcher.halted(("default", "gone")), DEADLINE)
        policy.hold.set()  # the create in flight lands; nothing after it is sent

        async def released() -> bool:
            jobs = await in_thread(op.platform.list_jobs, "default")
            pods = await in_thread(op.platform.list_replicas, "default", "gone")
            return not pods and all(j.name != "gone" for j in jobs)

        assert await wait_for(released, DEADLINE)
        await op.queue.wait_idle(DEADLINE)
        assert await in_thread(op.platform.list_replicas, "default", "gone") == []
        assert policy.reviewed == ["gone-worker-0"]
