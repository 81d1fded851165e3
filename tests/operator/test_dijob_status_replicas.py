"""A DIJob v2's ``status.replicas`` edited by a user on Kubernetes: a preemptible job grows to
the edited total (its ElasticJob's ``status.replicas`` takes it, the operator creates the pods,
the DIJob's status then counts them); a job that is not preemptible keeps its size, gets a
Warning event naming why, and its status is written back. Against the emulator with the kopf
operator; the test plays kubelet."""

from typing import Any

from kubernetes.client import CustomObjectsApi

from flexjob.api.foreign_kinds import DIJOB
from tests.operator.kopf_fixtures import OperatorHarness
from tests.operator.test_foreign_kinds import (
    DEADLINE,
    SPECS,
    cluster,  # noqa: F401 (the fixture)
    create,
    documents,
    elastic_job,
    pods,
    source,
)
from tests.operator.test_kopf_e2e import set_pod_phase
from tests.support.k8s_emulator import wait_for
from tests.support.k8s_fixtures import in_thread


async def _running_dijob(op: OperatorHarness, *, preemptible: bool) -> tuple[str, int]:
    """The repo's DIJob v2 example, all its pods Running and its status saying so."""
    [body] = documents(SPECS / "dijob-v2.yaml")
    body["spec"]["preemptible"] = preemptible
    name = body["metadata"]["name"]
    wanted = sum(t["replicas"] for t in body["spec"]["tasks"])
    await create(op, DIJOB, body)
    names = await wait_for(lambda: len(pods(op, name)) == wanted and pods(op, name), DEADLINE)
    for pod in names:
        await set_pod_phase(op, pod, "Running")
    await wait_for(lambda: _status(op, name).get("readyReplicas") == wanted, DEADLINE, 0.1)
    return name, wanted


def _status(op: OperatorHarness, name: str) -> dict[str, Any]:
    return source(op, DIJOB, "v2alpha1", name).get("status") or {}


async def _edit_replicas(op: OperatorHarness, name: str, replicas: int) -> None:
    await op.queue.wait_idle(DEADLINE)
    api = CustomObjectsApi(op.client)
    await in_thread(
        api.patch_namespaced_custom_object_status,
        DIJOB.group, "v2alpha1", "default", DIJOB.plural, name, {"status": {"replicas": replicas}},
    )  # fmt: skip


async def test_a_preemptible_dijobs_edited_status_replicas_is_the_size_its_job_grows_to(
    cluster: OperatorHarness,  # noqa: F811
) -> None:
    name, before = await _running_dijob(cluster, preemptible=True)
    await _edit_replicas(cluster, name, before + 2)
    grown = await wait_for(
        lambda: len(pods(cluster, name)) == before + 2 and pods(cluster, name), DEADLINE, 0.1
    )
    assert [p for p in grown if "learner" in p] == [f"{name}-learner-{i}" for i in range(3)]
    job = elastic_job(cluster, name) or {}
    assert job["status"]["replicas"]["learner"] == 3
    for pod in grown:
        await set_pod_phase(cluster, pod, "Running")
    await wait_for(lambda: _status(cluster, name).get("readyReplicas") == before + 2, DEADLINE, 0.1)
    assert _status(cluster, name)["replicas"] == before + 2


def _warnings(op: OperatorHarness, name: str) -> list[str]:
    kind = op.emulator.kind("", "v1", "events")
    return [
        e["message"]
        for e in op.emulator.store.select(kind, "default")
        if e.get("reason") == "ReplicasRefused" and e["involvedObject"]["name"] == name
    ]


async def test_a_fixed_size_dijobs_edited_status_replicas_is_refused_and_written_over(
    cluster: OperatorHarness,  # noqa: F811
) -> None:
    name, before = await _running_dijob(cluster, preemptible=False)
    await _edit_replicas(cluster, name, before + 2)
    [message] = await wait_for(lambda: _warnings(cluster, name), DEADLINE, 0.1)
    assert message == (
        f"status.replicas: {before + 2}: job default/{name} is not preemptible (its size is fixed)"
    )
    await wait_for(lambda: _status(cluster, name).get("replicas") == before, DEADLINE, 0.1)
    assert len(pods(cluster, name)) == before
    status = (elastic_job(cluster, name) or {}).get("status") or {}
    assert (status.get("replicas") or {}).get("learner", 1) == 1
