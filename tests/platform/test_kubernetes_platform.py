"""What the Kubernetes platform writes to the API server: pods, services, owners, status."""

from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest
from kubernetes.client import CoreV1Api, CustomObjectsApi

from flexjob.api import (
    ElasticJob,
    ElasticJobStatus,
    JobPhase,
    PodTemplateSpec,
    ReplicaPhase,
    ReplicaType,
)
from flexjob.api.names import LABEL_JOB_NAME, LABEL_RANK, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from flexjob.core.replicas import ReplicaRequest, ServiceRequest, replica_name
from flexjob.platform.contract import AlreadyExistsError, NotFoundError, WatchEventType
from flexjob.platform.kubernetes import KubernetesPlatform
from tests.support.k8s_fixtures import EmulatorThread
from tests.support.pod_status import pod_status

MERGE = "application/merge-patch+json"


@pytest.fixture()
def cluster() -> Iterator[tuple[KubernetesPlatform, kubernetes.client.ApiClient, EmulatorThread]]:
    thread = EmulatorThread()
    with thread as emulator:
        client = kubernetes.client.ApiClient(
            kubernetes.client.Configuration(host=emulator.base_url)
        )
        yield KubernetesPlatform(client), client, thread


@pytest.fixture()
def platform(cluster: tuple[KubernetesPlatform, object, object]) -> KubernetesPlatform:
    return cluster[0]


@pytest.fixture()
def core(cluster: tuple[object, kubernetes.client.ApiClient, object]) -> CoreV1Api:
    return CoreV1Api(cluster[1])


def make_job(platform: KubernetesPlatform, name: str = "j") -> ElasticJob:
    job = ElasticJob.model_validate(
        {"metadata": {"name": name}, "spec": {"replicaSpecs": {"worker": {"replicas": 1}}}}
    )
    return platform.create_job(job)


def request(
    job: str = "j", index: int = 0, type_: ReplicaType = ReplicaType.WORKER
) -> ReplicaRequest:
    labels = {
        LABEL_JOB_NAME: job,
        LABEL_REPLICA_TYPE: type_.value,
        LABEL_REPLICA_INDEX: str(index),
        LABEL_RANK: str(index),
    }
    template = PodTemplateSpec.model_validate(
        {"spec": {"containers": [{"name": "main", "image": "python:3.11", "command": ["python"]}]}}
    )
    return ReplicaRequest(
        namespace="default",
        job=job,
        type=type_,
        index=index,
        name=replica_name(job, type_, index),
        command=("python",),
        args=(),
        env={},
        labels=labels,
        resources={},
        template=template,
    )


def set_pod_phase(core: CoreV1Api, name: str, phase: str, exit_code: int | None = None) -> None:
    """Act as the kubelet: report the pod's phase (and its container's exit code)."""
    status = pod_status(phase, exit_code)
    core.patch_namespaced_pod_status(name, "default", {"status": status}, _content_type=MERGE)


def test_replica_pod_is_labelled_and_owned_by_its_job(
    platform: KubernetesPlatform, core: CoreV1Api
) -> None:
    job = make_job(platform)
    platform.create_replica(request())
    pod = core.read_namespaced_pod("j-worker-0", "default")
    assert pod.metadata.labels[LABEL_JOB_NAME] == "j"
    assert pod.metadata.labels[LABEL_RANK] == "0"
    assert [(r.kind, r.uid) for r in pod.metadata.owner_references] == [
        ("ElasticJob", job.metadata.uid)
    ]
    assert pod.spec.restart_policy == "Never"


def test_creating_a_taken_replica_name_raises_already_exists(platform: KubernetesPlatform) -> None:
    make_job(platform)
    platform.create_replica(request())
    with pytest.raises(AlreadyExistsError, match="j-worker-0"):
        platform.create_replica(request())


def test_missing_job_raises_not_found_naming_it(platform: KubernetesPlatform) -> None:
    with pytest.raises(NotFoundError, match="default/nope"):
        platform.get_job("default", "nope")


def test_replica_phase_and_exit_code_come_from_pod_status(
    platform: KubernetesPlatform, core: CoreV1Api
) -> None:
    make_job(platform)
    platform.create_replica(request())
    set_pod_phase(core, "j-worker-0", "Failed", exit_code=3)
    (replica,) = platform.list_replicas("default", "j")
    assert (replica.phase, replica.exit_code, replica.type, replica.index) == (
        ReplicaPhase.FAILED,
        3,
        ReplicaType.WORKER,
        0,
    )


def test_list_replicas_returns_only_the_jobs_pods(platform: KubernetesPlatform) -> None:
    make_job(platform, "a")
    make_job(platform, "b")
    platform.create_replica(request("a"))
    platform.create_replica(request("b"))
    assert [r.name for r in platform.list_replicas("default", "a")] == ["a-worker-0"]


def test_service_is_headless_and_selects_one_replica(
    platform: KubernetesPlatform, core: CoreV1Api
) -> None:
    make_job(platform)
    service = platform.create_service(
        ServiceRequest(
            namespace="default",
            job="j",
            name="j-master-0",
            replica="j-master-0",
            type=ReplicaType.MASTER,
            index=0,
            port=50001,
        )
    )
    body = core.read_namespaced_service("j-master-0", "default")
    assert body.spec.cluster_ip == "None"
    assert body.spec.selector == {
        LABEL_JOB_NAME: "j",
        LABEL_REPLICA_TYPE: "master",
        LABEL_REPLICA_INDEX: "0",
    }
    assert service.address == "j-master-0.default.svc:50001"
    assert [s.replica for s in platform.list_services("default", "j")] == ["j-master-0"]


def test_job_status_is_written_through_the_status_subresource(
    cluster: tuple[KubernetesPlatform, kubernetes.client.ApiClient, EmulatorThread],
) -> None:
    platform, client, _ = cluster
    make_job(platform)
    platform.patch_job_status("default", "j", {"phase": JobPhase.RUNNING})
    body = CustomObjectsApi(client).get_namespaced_custom_object(
        "flexjob.dev", "v1alpha1", "default", "elasticjobs", "j"
    )
    assert body["status"]["phase"] == "Running"
    assert body["metadata"]["generation"] == 1


def patch_status_as_another_writer(client: kubernetes.client.ApiClient, patch: Any) -> None:
    """Merge-patch job ``default/j``'s status subresource as kopf or a user would."""
    CustomObjectsApi(client).patch_namespaced_custom_object_status(
        "flexjob.dev", "v1alpha1", "default", "elasticjobs", "j", patch, _content_type=MERGE
    )


def test_status_patch_keeps_what_other_writers_put_in_the_status(
    cluster: tuple[KubernetesPlatform, kubernetes.client.ApiClient, EmulatorThread],
) -> None:
    platform, client, _ = cluster
    make_job(platform)
    patch_status_as_another_writer(
        client, {"status": {"kopf": {"progress": {"h": {}}}, "replicas": {"worker": 3}}}
    )
    platform.patch_job_status("default", "j", {"phase": JobPhase.RUNNING})
    body = CustomObjectsApi(client).get_namespaced_custom_object(
        "flexjob.dev", "v1alpha1", "default", "elasticjobs", "j"
    )
    assert body["status"]["kopf"] == {"progress": {"h": {}}}
    assert (body["status"]["phase"], body["status"]["replicas"]) == ("Running", {"worker": 3})


def test_kopf_keys_in_job_status_are_ignored(
    cluster: tuple[KubernetesPlatform, kubernetes.client.ApiClient, EmulatorThread],
) -> None:
    platform, client, _ = cluster
    make_job(platform)
    patch_status_as_another_writer(client, {"status": {"kopf": {"progress": {}}}})
    assert platform.get_job("default", "j").status == ElasticJobStatus()


def test_deleting_a_job_removes_its_pods_and_events(platform: KubernetesPlatform) -> None:
    make_job(platform)
    platform.create_replica(request())
    platform.record_event("default", "j", "Created", "created", "Normal")  # type: ignore[arg-type]
    platform.delete_job("default", "j")
    assert platform.list_replicas("default", "j") == []
    assert platform.list_events("default", "j") == []


def test_watch_replicas_reports_phase_changes(
    platform: KubernetesPlatform, core: CoreV1Api
) -> None:
    make_job(platform)
    platform.create_replica(request())
    set_pod_phase(core, "j-worker-0", "Running")
    events = [(e.type, e.object.phase) for e in platform.watch_replicas("default", "j", timeout=1)]
    assert events == [(WatchEventType.ADDED, ReplicaPhase.RUNNING)]


def test_logs_are_read_line_by_line(
    cluster: tuple[KubernetesPlatform, kubernetes.client.ApiClient, EmulatorThread],
) -> None:
    platform, _, thread = cluster
    make_job(platform)
    platform.create_replica(request())
    assert thread.emulator is not None
    thread.emulator.store.logs["default", "j-worker-0"] = "one\ntwo\n"
    assert list(platform.read_logs("default", "j-worker-0")) == ["one\n", "two\n"]
