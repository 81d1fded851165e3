"""Pod creates from ``PodCreates``' own event loop against the Kubernetes emulator: the pod
``KubernetesPlatform.create_replica`` would make (owned by its job), the same ``Replica`` back,
the platform's errors for a refused one, and nothing left waiting once it is closed."""

import json
from typing import Any

import kubernetes.client
import pytest

from flexjob.api import ReplicaType
from flexjob.api.load import job_from_dict
from flexjob.core.operator.replica_plan import render_replica
from flexjob.operator.kubernetes.pod_creates import PodCreates
from flexjob.operator.kubernetes.runner import OperatorConfig
from flexjob.platform.contract import AlreadyExistsError, ReplicaRequest
from flexjob.platform.kubernetes import KubernetesPlatform
from tests.api.specs import valid_job
from tests.support.k8s_fixtures import EmulatorThread

JOB = job_from_dict(valid_job())


def request(index: int) -> ReplicaRequest:
    return render_replica(
        JOB, ReplicaType.WORKER, index, master_address=None, own_address=None, node=None
    )


def test_pods_created_from_the_loop_are_the_platforms(k8s_emulator_thread: EmulatorThread) -> None:
    assert k8s_emulator_thread.emulator is not None
    url = k8s_emulator_thread.emulator.base_url
    platform = KubernetesPlatform.from_config(server=url)
    stored = platform.create_job(JOB)
    creates = PodCreates(platform, OperatorConfig(server=url).connection, limit=4)
    try:
        made = [creates.create(request(i)).result(10) for i in range(3)]
        listed = {r.name: r for r in platform.list_replicas("default", "mnist")}
        assert sorted(listed) == ["mnist-worker-0", "mnist-worker-1", "mnist-worker-2"]
        assert [(r.name, r.uid, r.index) for r in made] == [
            (n, listed[n].uid, i) for i, n in enumerate(sorted(listed))
        ]
        pod = _pod(url, "mnist-worker-0")
        assert [o["uid"] for o in pod["metadata"]["ownerReferences"]] == [stored.metadata.uid]
        assert pod["spec"]["containers"][0]["image"] == "flexjob/mnist:0.1"
        with pytest.raises(AlreadyExistsError):
            creates.create(request(0)).result(10)
        platform.delete_job("default", "mnist")
        again = platform.create_job(JOB)  # a new job of that name: its pods are owned by it
        creates.create(request(4)).result(10)
        owners = _pod(url, "mnist-worker-4")["metadata"]["ownerReferences"]
        assert [o["uid"] for o in owners] == [again.metadata.uid] != [stored.metadata.uid]
    finally:
        creates.close()
    with pytest.raises(RuntimeError):  # closed: no loop to send from
        creates.create(request(3))


def _pod(url: str, name: str) -> Any:
    """The pod as the API server stores it."""
    client = kubernetes.client.ApiClient(kubernetes.client.Configuration(host=url))
    core = kubernetes.client.CoreV1Api(client)
    return json.loads(core.read_namespaced_pod(name, "default", _preload_content=False).data)
