"""The Kubernetes emulator behaves like an API server for the official client and for kopf."""

import asyncio
import json

import aiohttp
import pytest
from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from tests.support.k8s_emulator import K8sEmulator
from tests.support.k8s_fixtures import in_thread

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def pod(name: str = "p", labels: dict[str, str] | None = None, **meta: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}, **meta},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def job(name: str = "j") -> dict[str, object]:
    return {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ElasticJob",
        "metadata": {"name": name},
        "spec": {"a": 1},
    }


async def create_pod(
    client: ApiClient, body: dict[str, object], ns: str = "default"
) -> dict[str, object]:
    resp = await in_thread(CoreV1Api(client).create_namespaced_pod_with_http_info, ns, body)
    data, status, _headers = resp
    assert status == 201
    return client.sanitize_for_serialization(data)  # type: ignore[no-any-return]


async def custom(
    client: ApiClient, method: str, *args: object, **kwargs: object
) -> dict[str, object]:
    api = CustomObjectsApi(client)
    return await in_thread(getattr(api, method), "flexjob.dev", "v1alpha1", *args, **kwargs)  # type: ignore[no-any-return]


async def test_create_answers_201_with_server_metadata(k8s_client: ApiClient) -> None:
    created = await create_pod(k8s_client, pod("a"), ns="team")
    meta = created["metadata"]
    assert meta["namespace"] == "team"
    assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]


async def test_generate_name_gives_distinct_names(k8s_client: ApiClient) -> None:
    body = pod("")
    body["metadata"] = {"generateName": "w-"}
    first = await create_pod(k8s_client, body)
    second = await create_pod(k8s_client, body)
    assert first["metadata"]["name"].startswith("w-")
    assert first["metadata"]["name"] != second["metadata"]["name"]


async def test_create_of_existing_name_conflicts(k8s_client: ApiClient) -> None:
    await create_pod(k8s_client, pod("a"))
    with pytest.raises(ApiException) as info:
        await create_pod(k8s_client, pod("a"))
    assert info.value.status == 409


async def test_list_filters_by_label_selector(k8s_client: ApiClient) -> None:
    await create_pod(k8s_client, pod("a", {"job": "x", "type": "worker"}))
    await create_pod(k8s_client, pod("b", {"job": "x", "type": "master"}))
    await create_pod(k8s_client, pod("c", {"job": "y"}))
    api = CoreV1Api(k8s_client)

    async def names(selector: str) -> list[str]:
        pods = await in_thread(api.list_namespaced_pod, "default", label_selector=selector)
        return [p.metadata.name for p in pods.items]

    assert await names("job=x") == ["a", "b"]
    assert await names("job=x,type!=master") == ["a"]
    assert await names("type in (master, worker)") == ["a", "b"]
    assert await names("!type") == ["c"]


async def test_list_filters_by_field_selector(k8s_client: ApiClient) -> None:
    await create_pod(k8s_client, pod("a"))
    await create_pod(k8s_client, pod("b"))
    pods = await in_thread(
        CoreV1Api(k8s_client).list_namespaced_pod, "default", field_selector="metadata.name=b"
    )
    assert [p.metadata.name for p in pods.items] == ["b"]


async def test_list_reports_the_current_resource_version(k8s_client: ApiClient) -> None:
    created = await create_pod(k8s_client, pod("a"))
    pods = await in_thread(CoreV1Api(k8s_client).list_namespaced_pod, "default")
    assert pods.metadata.resource_version == created["metadata"]["resourceVersion"]


async def test_merge_patch_changes_fields_and_bumps_resource_version(k8s_client: ApiClient) -> None:
    created = await create_pod(k8s_client, pod("a", {"k": "v"}))
    patched = await in_thread(
        CoreV1Api(k8s_client).patch_namespaced_pod,
        "a",
        "default",
        {"metadata": {"labels": {"k": None, "n": "1"}}},
        _content_type=MERGE,
    )
    assert patched.metadata.labels == {"n": "1"}
    assert int(patched.metadata.resource_version) > int(created["metadata"]["resourceVersion"])


async def test_json_patch_with_current_resource_version_adds_a_finalizer(
    k8s_client: ApiClient,
) -> None:
    created = await create_pod(k8s_client, pod("a"))
    ops = [
        {
            "op": "test",
            "path": "/metadata/resourceVersion",
            "value": created["metadata"]["resourceVersion"],
        },
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/x"]},
    ]
    patched = await in_thread(
        CoreV1Api(k8s_client).patch_namespaced_pod, "a", "default", ops, _content_type=JSON_PATCH
    )
    assert patched.metadata.finalizers == ["example.com/x"]


async def test_json_patch_with_stale_resource_version_test_is_rejected(
    k8s_client: ApiClient,
) -> None:
    await create_pod(k8s_client, pod("a"))
    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": "0"}]
    with pytest.raises(ApiException) as info:
        await in_thread(
            CoreV1Api(k8s_client).patch_namespaced_pod,
            "a",
            "default",
            ops,
            _content_type=JSON_PATCH,
        )
    assert info.value.status == 422


async def created_then_patched(
    k8s_client: ApiClient, method: str, spec_a: int
) -> dict[str, object]:
    """Job ``j`` created, then patched through ``method`` to spec ``a: spec_a`` and status
    Running: the object that call returns."""
    await custom(k8s_client, "create_namespaced_custom_object", "default", "elasticjobs", job())
    body = {"spec": {"a": spec_a}, "status": {"phase": "Running"}}
    return await custom(k8s_client, method, "default", "elasticjobs", "j", body)


async def test_main_endpoint_ignores_status_of_a_status_subresource(k8s_client: ApiClient) -> None:
    patched = await created_then_patched(k8s_client, "patch_namespaced_custom_object", 2)
    assert patched["spec"] == {"a": 2}
    assert "status" not in patched
    assert patched["metadata"]["generation"] == 2


async def test_status_endpoint_changes_only_status_and_keeps_generation(
    k8s_client: ApiClient,
) -> None:
    patched = await created_then_patched(k8s_client, "patch_namespaced_custom_object_status", 9)
    assert patched["status"] == {"phase": "Running"}
    assert patched["spec"] == {"a": 1}
    assert patched["metadata"]["generation"] == 1


async def test_put_with_stale_resource_version_conflicts(k8s_client: ApiClient) -> None:
    created = await create_pod(k8s_client, pod("a"))
    created["metadata"]["labels"] = {"x": "1"}
    replaced = await in_thread(
        CoreV1Api(k8s_client).replace_namespaced_pod, "a", "default", created
    )
    assert replaced.metadata.labels == {"x": "1"}
    with pytest.raises(ApiException) as info:
        await in_thread(CoreV1Api(k8s_client).replace_namespaced_pod, "a", "default", created)
    assert info.value.status == 409


async def test_delete_waits_for_finalizers(k8s_client: ApiClient) -> None:
    api = CoreV1Api(k8s_client)
    await create_pod(k8s_client, pod("a", finalizers=["x/y"]))
    await in_thread(api.delete_namespaced_pod, "a", "default")
    marked = await in_thread(api.read_namespaced_pod, "a", "default")
    assert marked.metadata.deletion_timestamp is not None
    await in_thread(
        api.patch_namespaced_pod,
        "a",
        "default",
        {"metadata": {"finalizers": None}},
        _content_type=MERGE,
    )
    with pytest.raises(ApiException) as info:
        await in_thread(api.read_namespaced_pod, "a", "default")
    assert info.value.status == 404


async def test_delete_collection_removes_only_selected(k8s_client: ApiClient) -> None:
    api = CoreV1Api(k8s_client)
    await create_pod(k8s_client, pod("a", {"job": "x"}))
    await create_pod(k8s_client, pod("b", {"job": "y"}))
    await in_thread(api.delete_collection_namespaced_pod, "default", label_selector="job=x")
    pods = await in_thread(api.list_namespaced_pod, "default")
    assert [p.metadata.name for p in pods.items] == ["b"]


async def test_deleting_an_owner_collects_its_dependents(k8s_client: ApiClient) -> None:
    owner = await custom(
        k8s_client, "create_namespaced_custom_object", "default", "elasticjobs", job()
    )
    ref = {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ElasticJob",
        "name": "j",
        "uid": owner["metadata"]["uid"],
    }
    await create_pod(k8s_client, pod("a", ownerReferences=[ref]))
    await create_pod(k8s_client, pod("b"))
    await custom(k8s_client, "delete_namespaced_custom_object", "default", "elasticjobs", "j")
    pods = await in_thread(CoreV1Api(k8s_client).list_namespaced_pod, "default")
    assert [p.metadata.name for p in pods.items] == ["b"]


async def read_watch(emulator: K8sEmulator, query: str, count: int) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{emulator.base_url}/api/v1/namespaces/default/pods?watch=true&{query}"
        ) as resp,
    ):
        async for line in resp.content:
            events.append(json.loads(line))
            if len(events) == count:
                break
    return events


async def test_watch_resumes_after_a_resource_version_in_its_namespace(
    k8s_emulator: K8sEmulator, k8s_client: ApiClient
) -> None:
    first = await create_pod(k8s_client, pod("a"))
    await create_pod(k8s_client, pod("other"), ns="elsewhere")
    await create_pod(k8s_client, pod("b"))
    events = await read_watch(
        k8s_emulator, f"resourceVersion={first['metadata']['resourceVersion']}", 1
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "b")]


async def test_watch_streams_live_changes_matching_the_selector(
    k8s_emulator: K8sEmulator, k8s_client: ApiClient
) -> None:
    reader = asyncio.create_task(read_watch(k8s_emulator, "labelSelector=job%3Dx", 2))
    await create_pod(k8s_client, pod("skip", {"job": "y"}))
    await create_pod(k8s_client, pod("a", {"job": "x"}))
    await in_thread(CoreV1Api(k8s_client).delete_namespaced_pod, "a", "default")
    events = await asyncio.wait_for(reader, 5)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("DELETED", "a"),
    ]


async def test_watch_ends_after_timeout_seconds(k8s_emulator: K8sEmulator) -> None:
    events = await asyncio.wait_for(
        read_watch(k8s_emulator, "timeoutSeconds=1&resourceVersion=1", 99), 5
    )
    assert events == []


async def test_namespaces_and_custom_resources_are_discoverable(k8s_emulator: K8sEmulator) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{k8s_emulator.base_url}/api/v1/namespaces") as resp:
            namespaces = await resp.json()
        async with session.get(f"{k8s_emulator.base_url}/apis/flexjob.dev/v1alpha1") as resp:
            resources = await resp.json()
    assert [n["metadata"]["name"] for n in namespaces["items"]] == ["default"]
    assert {"elasticjobs", "elasticjobs/status", "scaleplans"} <= {
        r["name"] for r in resources["resources"]
    }
