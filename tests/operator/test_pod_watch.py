"""The operator's own pod watch (``flexjob/operator/kubernetes/pod_watch.py``) on the emulator:
what exists is listed first, what changes later comes over the watch, also after the server
ended a watch stream, and only the pods of the namespaces served."""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import kopf

from flexjob.api.names import LABEL_JOB_NAME
from flexjob.operator.kubernetes.pod_watch import PodWatch
from tests.support.k8s_emulator import K8sEmulator, wait_for

DEADLINE = 20.0


def pod(namespace: str, name: str, job: str | None = "train") -> dict[str, Any]:
    labels = {LABEL_JOB_NAME: job} if job else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "python:3.11"}]},
    }


class Seen:
    def __init__(self) -> None:
        self.events: list[tuple[str | None, str, str]] = []

    def __call__(self, type: str | None, body: Mapping[str, Any]) -> None:
        meta = body["metadata"]
        self.events.append((type, meta["namespace"], meta["name"]))


@contextlib.asynccontextmanager
async def watching(
    emulator: K8sEmulator, namespaces: Sequence[str] = (), timeout: float | None = None
) -> AsyncIterator[tuple[PodWatch, Seen]]:
    seen = Seen()
    watch = PodWatch(
        lambda: kopf.ConnectionInfo(server=emulator.base_url), seen, namespaces, timeout
    )
    task = asyncio.create_task(watch.run())
    try:
        await asyncio.wait_for(watch.listed.wait(), DEADLINE)
        yield watch, seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def add(emulator: K8sEmulator, body: dict[str, Any]) -> None:
    emulator.store.create(emulator.kind("", "v1", "pods"), body["metadata"]["namespace"], body)
    await emulator.notify()


async def test_listed_pods_first_then_changes_also_after_the_server_ended_the_watch(
    k8s_emulator: K8sEmulator,
) -> None:
    await add(k8s_emulator, pod("default", "before"))
    await add(k8s_emulator, pod("default", "unlabelled", job=None))
    async with watching(k8s_emulator, timeout=1) as (_, seen):
        assert seen.events == [(None, "default", "before")]
        await asyncio.sleep(2.5)  # the server has ended the first watch stream (1 s)
        await add(k8s_emulator, pod("default", "after"))
        await wait_for(lambda: ("ADDED", "default", "after") in seen.events, DEADLINE)
        pods = k8s_emulator.kind("", "v1", "pods")
        k8s_emulator.store.delete(pods, "default", "before")
        await k8s_emulator.notify()
        await wait_for(lambda: ("DELETED", "default", "before") in seen.events, DEADLINE)
        assert all(name != "unlabelled" for _, _, name in seen.events)


async def test_only_the_namespaces_served(k8s_emulator: K8sEmulator) -> None:
    for namespace in ("team-a", "team-b", "other"):
        await add(k8s_emulator, pod(namespace, "listed"))
    async with watching(k8s_emulator, namespaces=("team-*", "default")) as (_, seen):
        for namespace in ("team-a", "other", "default"):
            await add(k8s_emulator, pod(namespace, "watched"))
        await wait_for(lambda: ("ADDED", "default", "watched") in seen.events, DEADLINE)
        await wait_for(lambda: ("ADDED", "team-a", "watched") in seen.events, DEADLINE)
        assert sorted(seen.events[:2]) == [(None, "team-a", "listed"), (None, "team-b", "listed")]
        assert all(namespace != "other" for _, namespace, _ in seen.events)
