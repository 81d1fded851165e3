"""What an ElasticJob's watch event queues (``handlers.job_handler``): a new job or a changed
spec at once; a change of its status or metadata only (the same generation) after the job's
batch period, folded with its pod events; the answer of the operator's own status patch
coming back over the watch (or any state the cache gives passes already) nothing."""

import asyncio
from typing import Any

import kopf

from flexjob.api import ElasticJob
from flexjob.operator.kubernetes.handlers import job_handler
from flexjob.operator.work_queue import JobKey, JobQueue

KEY = ("default", "mnist")


def body(version: str, generation: int) -> dict[str, Any]:
    return {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ElasticJob",
        "metadata": {
            "name": "mnist",
            "namespace": "default",
            "resourceVersion": version,
            "generation": generation,
        },
        "spec": {"replicaSpecs": {"worker": {"replicas": 2}}},
    }


async def test_job_events_queue_at_once_later_or_not_at_all() -> None:
    passes: list[JobKey] = []

    async def handle(key: JobKey) -> None:
        passes.append(key)

    queue = JobQueue(handle, workers=1, batch_period=3600)  # a batch never ends here
    event = job_handler(queue)
    task = asyncio.create_task(queue.run())
    try:
        await event(type="ADDED", body=kopf.Body(body("1", 1)))  # a new job: at once
        await queue.wait_idle(5)
        assert passes == [KEY]

        queue.cache.status_sent(KEY, {"phase": "Running"}, write=1)  # a pass wrote it
        ours = body("2", 1) | {"status": {"phase": "Running"}}
        await event(type="MODIFIED", body=kopf.Body(ours))  # ... it comes back before its answer
        queue.cache.status_answered(KEY, 1, ElasticJob.model_validate(ours))
        ours = body("3", 1) | {"status": {"phase": "Running"}}
        await event(type="MODIFIED", body=kopf.Body(ours))  # a write that changed nothing
        await queue.wait_idle(5)
        assert (passes, queue.idle) == ([KEY], True)

        await event(type="MODIFIED", body=kopf.Body(body("4", 1)))  # someone's status write
        await queue.wait_idle(0.3)  # bounded: it waits for its batch
        assert (passes, queue.idle) == ([KEY], False)

        await event(type="MODIFIED", body=kopf.Body(body("5", 2)))  # the spec changed
        await queue.wait_idle(5)
        assert (passes, queue.idle) == ([KEY, KEY], True)  # the waiting one folded in
    finally:
        task.cancel()
