"""Foreign job kinds on Kubernetes (DIJob v1/v2, AggregatorConfig, ElasticAIJob): their CRDs
are in ``flexjob manifests``, the kopf operator runs each object as an ElasticJob converted by
the readers, writes the status back in the kind's own shape, and the admission webhooks check
them with the readers' messages. Against the emulator; the test plays kubelet."""

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import kmock
import pytest
import pytest_asyncio
import yaml
from kubernetes.client import CustomObjectsApi
from kubernetes.client.exceptions import ApiException
from typer.testing import CliRunner

from flexjob.api.foreign_kinds import (
    AGGREGATOR_CONFIG,
    DIJOB,
    DLROVER_JOB,
    ELASTIC_AI_JOB,
    FOREIGN_KINDS,
    SOURCE_ANNOTATION,
    ForeignKind,
    foreign_crd,
)
from flexjob.api.names import LABEL_JOB_NAME
from flexjob.cli.main import app
from flexjob.operator.kubernetes.admission import validate_foreign
from tests.operator.kopf_fixtures import OperatorHarness, install_webhooks, running_operator
from tests.operator.test_kopf_e2e import set_pod_phase
from tests.support.k8s_emulator import K8sEmulator, wait_for
from tests.support.k8s_fixtures import (
    ELASTICJOBS,
    REPO,
    SCALEPLANS,
    declare_foreign_kinds,
    in_thread,
)

SPECS = REPO / "examples" / "specs"
DEADLINE = 30.0  # bounded waits; generous for a loaded machine


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_flexjob_manifests_includes_the_foreign_kinds_crds() -> None:
    out = CliRunner().invoke(app, ["manifests", "crds"])
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(out.stdout)]
    assert {k.crd_name for k in FOREIGN_KINDS} <= set(names)
    dijob = foreign_crd(DIJOB)
    assert [v["name"] for v in dijob["spec"]["versions"]] == ["v1alpha1", "v1alpha2", "v2alpha1"]
    assert [v["storage"] for v in dijob["spec"]["versions"]] == [False, False, True]
    assert foreign_crd(AGGREGATOR_CONFIG)["spec"]["scope"] == "Cluster"


@pytest_asyncio.fixture()
async def cluster() -> AsyncIterator[OperatorHarness]:
    """The emulator with flexjob's and the foreign kinds' CRDs, the operator and its webhooks."""
    async with K8sEmulator() as emulator, kmock.Server(emulator):
        emulator.declare(ELASTICJOBS)
        emulator.declare(SCALEPLANS)
        declare_foreign_kinds(emulator)
        async with running_operator(emulator) as operator:
            yield await install_webhooks(operator)


async def create(op: OperatorHarness, kind: ForeignKind, body: dict[str, Any]) -> None:
    api = CustomObjectsApi(op.client)
    group, version = body["apiVersion"].split("/")
    if kind.namespaced:
        call = api.create_namespaced_custom_object
        namespace = body["metadata"].get("namespace", "default")
        args: tuple[Any, ...] = (group, version, namespace, kind.plural, body)
    else:
        call, args = api.create_cluster_custom_object, (group, version, kind.plural, body)

    async def created() -> bool:
        try:
            await in_thread(call, *args)
        except ApiException as exc:
            if exc.status == 500 and "failed calling webhook" in str(exc.body):
                return False  # the webhook server is still starting
            raise
        return True

    await wait_for(created, DEADLINE, 0.1)


async def converted(op: OperatorHarness, kind: ForeignKind, body: dict[str, Any]) -> dict[str, Any]:
    """Create the foreign job ``body``; the ElasticJob the operator makes of it, once there."""
    await create(op, kind, body)
    name = body["metadata"]["name"]
    job: dict[str, Any] = await wait_for(lambda: elastic_job(op, name), DEADLINE, 0.1)
    return job


def source(op: OperatorHarness, kind: ForeignKind, version: str, name: str) -> dict[str, Any]:
    store = op.emulator.store
    return store.get(op.emulator.kind(kind.group, version, kind.plural), "default", name)


def elastic_job(op: OperatorHarness, name: str) -> dict[str, Any] | None:
    found = op.emulator.store.select(ELASTICJOBS, "default", fields=f"metadata.name={name}")
    return found[0] if found else None


def pods(op: OperatorHarness, job: str) -> list[str]:
    kind = op.emulator.kind("", "v1", "pods")
    return sorted(
        p["metadata"]["name"]
        for p in op.emulator.store.select(kind, "default", f"{LABEL_JOB_NAME}={job}")
    )


async def test_a_dijob_v2_runs_as_an_elasticjob_and_shows_its_status_in_v2_shape(
    cluster: OperatorHarness,
) -> None:
    [body] = documents(SPECS / "dijob-v2.yaml")
    name = body["metadata"]["name"]
    job = await converted(cluster, DIJOB, body)
    dijob = source(cluster, DIJOB, "v2alpha1", name)
    assert job["metadata"]["annotations"][SOURCE_ANNOTATION] == DIJOB.crd_name
    [owner] = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("DIJob", dijob["metadata"]["uid"])
    tasks = {t["type"]: t["replicas"] for t in body["spec"]["tasks"]}
    replica_specs = job["spec"]["replicaSpecs"]
    assert {t: s["replicas"] for t, s in replica_specs.items()} == tasks
    wanted = sum(tasks.values())
    names = await wait_for(
        lambda: len(pods(cluster, name)) == wanted and pods(cluster, name), DEADLINE
    )
    for pod in names:
        await set_pod_phase(cluster, pod, "Running")

    def shown() -> dict[str, Any] | None:
        status = source(cluster, DIJOB, "v2alpha1", name).get("status") or {}
        return status if status.get("phase") == "Running" else None

    status = await wait_for(shown, DEADLINE, 0.1)
    assert (status["replicas"], status["readyReplicas"], status["restarts"]) == (wanted, wanted, 0)
    assert "replicaStatuses" not in status  # the v2 shape, not the ElasticJob's


def dijob_v1_documents() -> tuple[dict[str, Any], dict[str, Any]]:
    """The DIJob v1 example and its AggregatorConfig, cluster-scoped here."""
    job_doc, aggregator = documents(SPECS / "dijob-v1.yaml")
    aggregator["metadata"].pop("namespace")
    return job_doc, aggregator


async def test_a_dijob_v1_starts_its_coordinator_with_the_cluster_aggregator_config(
    cluster: OperatorHarness,
) -> None:
    job_doc, aggregator = dijob_v1_documents()
    await create(cluster, AGGREGATOR_CONFIG, aggregator)
    job = await converted(cluster, DIJOB, job_doc)
    name = job_doc["metadata"]["name"]
    assert job["spec"]["aggregatorConfig"]["metadata"]["name"] == aggregator["metadata"]["name"]
    assert job["spec"]["replicaSpecs"]["aggregator"]["replicas"] == 0
    coordinator = f"{name}-coordinator-0"
    await wait_for(lambda: pods(cluster, name) == [coordinator], DEADLINE, 0.1)

    def phase() -> str:
        status = source(cluster, DIJOB, "v1alpha1", name).get("status") or {}
        return str(status.get("phase") or "")

    assert await wait_for(lambda: phase() == "Created" and phase(), DEADLINE, 0.1)
    await set_pod_phase(cluster, coordinator, "Running")
    await wait_for(lambda: phase() == "Running", DEADLINE, 0.1)
    await set_pod_phase(cluster, coordinator, "Succeeded", exit_code=0)
    await wait_for(lambda: phase() == "Succeeded", DEADLINE, 0.1)
    status = source(cluster, DIJOB, "v1alpha1", name)["status"]
    assert status["replicaStatus"]["coordinator"]["succeeded"] == 1


async def test_an_aggregator_config_created_after_a_dijob_v1_reaches_its_job(
    cluster: OperatorHarness,
) -> None:
    job_doc, aggregator = dijob_v1_documents()
    job = await converted(cluster, DIJOB, job_doc)
    name = job_doc["metadata"]["name"]
    assert "aggregator" not in job["spec"]["replicaSpecs"]  # the cluster has none yet
    await create(cluster, AGGREGATOR_CONFIG, aggregator)

    def aggregator_spec() -> dict[str, Any] | None:
        found = elastic_job(cluster, name)
        return (found or {}).get("spec", {}).get("replicaSpecs", {}).get("aggregator")

    spec = await wait_for(aggregator_spec, DEADLINE, 0.1)
    wanted = aggregator["spec"]["aggregator"]["template"]["spec"]["containers"][0]["image"]
    assert spec["template"]["spec"]["containers"][0]["image"] == wanted
    assert spec["replicas"] == 0  # on request, as the coordinator asks


async def test_a_dijob_v2_whose_evaluator_task_is_removed_runs_without_it(
    cluster: OperatorHarness,
) -> None:
    [body] = documents(SPECS / "dijob-v2.yaml")
    name = body["metadata"]["name"]
    await converted(cluster, DIJOB, body)
    tasks = [t for t in body["spec"]["tasks"] if t["type"] != "evaluator"]
    patch = [{"op": "replace", "path": "/spec/tasks", "value": tasks}]
    api = CustomObjectsApi(cluster.client)
    await in_thread(
        api.patch_namespaced_custom_object,
        DIJOB.group, "v2alpha1", "default", DIJOB.plural, name, patch,
        _content_type="application/json-patch+json",
    )  # fmt: skip

    def types() -> list[str] | None:
        found = sorted((elastic_job(cluster, name) or {})["spec"]["replicaSpecs"])
        return found if "evaluator" not in found else None

    assert await wait_for(types, DEADLINE, 0.1) == ["collector", "learner"]


def pod(op: OperatorHarness, name: str) -> dict[str, Any]:
    return op.emulator.store.get(op.emulator.kind("", "v1", "pods"), "default", name)


async def test_the_seeds_elasticaijob_runs_its_own_master_relaunches_a_worker_and_succeeds(
    cluster: OperatorHarness,
) -> None:
    [body] = documents(SPECS / "elasticaijob.yaml")  # the ElasticDL design's job, unchanged
    name = body["metadata"]["name"]
    await create(cluster, ELASTIC_AI_JOB, body)
    master = f"{name}-master-0"
    await wait_for(lambda: master in pods(cluster, name), DEADLINE, 0.1)
    [main] = pod(cluster, master)["spec"]["containers"]
    written = [part for arg in body["spec"]["jobArgs"] for part in arg.split(" ", 1)]
    assert (main["image"], main.get("command"), main["args"]) == ("elasticdl-mnist", None, written)
    await set_pod_phase(cluster, master, "Running")
    wanted = 1 + 2 + 10
    await wait_for(lambda: len(pods(cluster, name)) == wanted, DEADLINE, 0.1)
    ps = pod(cluster, f"{name}-ps-0")["spec"]["containers"][0]
    assert (ps["image"], ps.get("command")) == ("elasticdl-ps", None)  # its own PS, not flexjob's
    for each in pods(cluster, name):
        await set_pod_phase(cluster, each, "Running")
    version = body["apiVersion"].split("/")[1]

    def status() -> dict[str, Any]:
        return source(cluster, ELASTIC_AI_JOB, version, name).get("status") or {}

    await wait_for(lambda: status().get("phase") == "Running", DEADLINE, 0.1)
    assert set(status()["replicaStatuses"]) == {"Master", "PS", "Worker"}
    worker = pod(cluster, f"{name}-worker-3")
    await set_pod_phase(cluster, worker["metadata"]["name"], "Failed", exit_code=1)

    def relaunched() -> bool:
        again = [p for p in pods(cluster, name) if p == f"{name}-worker-3"]
        return (
            bool(again) and pod(cluster, again[0])["metadata"]["uid"] != worker["metadata"]["uid"]
        )

    await wait_for(relaunched, DEADLINE, 0.1)  # restartPolicy: Never: the operator relaunches
    assert status().get("phase") != "Failed"
    await set_pod_phase(cluster, master, "Succeeded", exit_code=0)
    await wait_for(lambda: status().get("phase") == "Succeeded", DEADLINE, 0.1)


async def test_a_dlrover_elasticjob_runs_as_a_flexjob_elasticjob_with_its_status_written_back(
    cluster: OperatorHarness,
) -> None:
    [body] = documents(SPECS / "dlrover-elasticjob.yaml")
    body["metadata"]["namespace"] = "default"  # where this module's helpers look
    name = body["metadata"]["name"]
    job = await converted(cluster, DLROVER_JOB, body)
    assert job["metadata"]["annotations"][SOURCE_ANNOTATION] == DLROVER_JOB.crd_name
    [owner] = job["metadata"]["ownerReferences"]
    assert owner["apiVersion"] == body["apiVersion"] and owner["kind"] == "ElasticJob"
    assert set(body["spec"]["replicaSpecs"]) <= set(job["spec"]["replicaSpecs"])
    version = body["apiVersion"].split("/")[1]

    def shown() -> dict[str, Any] | None:
        status = source(cluster, DLROVER_JOB, version, name).get("status") or {}
        return status if status.get("phase") else None

    status = await wait_for(shown, DEADLINE, 0.1)
    assert set(status) >= {"phase", "conditions", "replicaStatuses"}


def test_the_dlrover_kind_has_a_crd_and_a_webhook_path_of_its_own() -> None:
    assert foreign_crd(DLROVER_JOB)["metadata"]["name"] == "elasticjobs.elastic.iml.github.io"
    assert validate_foreign(DLROVER_JOB) == "validate-dlrover-elasticjob"
    assert validate_foreign(ELASTIC_AI_JOB) == "validate-elasticaijob"


def test_the_elasticaijob_crd_has_the_eaijob_short_name() -> None:
    assert foreign_crd(ELASTIC_AI_JOB)["spec"]["names"]["shortNames"] == ["eaijob"]


async def test_a_bad_dijob_is_refused_naming_its_own_field(cluster: OperatorHarness) -> None:
    [body] = documents(SPECS / "dijob-v2.yaml")
    body["spec"]["tasks"][0]["type"] = "teacher"
    with pytest.raises(ApiException) as refused:
        await create(cluster, DIJOB, body)
    assert refused.value.status == 422
    message = json.loads(refused.value.body)["message"]
    assert "validate-dijob.flexjob.dev" in message
    assert "spec.tasks[0].type" in message, message
    assert elastic_job(cluster, body["metadata"]["name"]) is None


async def test_deleting_the_dijob_deletes_its_job_and_pods(cluster: OperatorHarness) -> None:
    [body] = documents(SPECS / "dijob-v2.yaml")
    name = body["metadata"]["name"]
    await create(cluster, DIJOB, body)
    await wait_for(lambda: pods(cluster, name), DEADLINE, 0.1)
    api = CustomObjectsApi(cluster.client)
    await in_thread(
        api.delete_namespaced_custom_object,
        DIJOB.group,
        "v2alpha1",
        "default",
        DIJOB.plural,
        name,
    )
    await wait_for(lambda: elastic_job(cluster, name) is None and not pods(cluster, name), DEADLINE)


async def test_a_collector_the_server_adds_gets_its_service_and_then_its_pod(
    cluster: OperatorHarness,
) -> None:
    """As ``flexjob server`` does for a coordinator: only the job's status changes. The pass
    that creates the collector's Service runs the next pass itself (nothing watched changes)."""
    job_doc, _ = documents(SPECS / "dijob-v1.yaml")
    name = job_doc["metadata"]["name"]
    await create(cluster, DIJOB, job_doc)
    coordinator = f"{name}-coordinator-0"
    await wait_for(lambda: pods(cluster, name) == [coordinator], DEADLINE, 0.1)
    await set_pod_phase(cluster, coordinator, "Running")

    def running() -> bool:
        job = elastic_job(cluster, name) or {}
        return (job.get("status") or {}).get("phase") == "Running"

    await wait_for(running, DEADLINE, 0.1)
    await cluster.queue.wait_idle(DEADLINE)
    await cluster.custom(
        "patch_namespaced_custom_object_status",
        "default",
        "elasticjobs",
        name,
        {"status": {"replicas": {"collector": 1}}},
    )
    collector = f"{name}-collector-0"
    await wait_for(lambda: collector in pods(cluster, name), DEADLINE, 0.1)
