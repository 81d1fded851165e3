"""The master's node watcher on both platforms: a replica that dies without a word from its
agent has its shards handed out again at once (long before the heartbeat timeout), its exit
reason reaches the stats, and a replica pending too long becomes a Warning event on the job.

Local: real processes of the local platform. Kubernetes: pods in the emulator whose status the
test writes as a kubelet would (a Failed pod ``OOMKilled``, a pod left Pending); every call the
watcher makes is one the implicit master's ClusterRole grants."""

import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
from kubernetes.client import CoreV1Api

from flexjob.api import Container, ReplicaType
from flexjob.api.names import LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import MasterConfig, NodeHealthConfig
from flexjob.core.training.node_watch import NodeWatchKind
from flexjob.master.node_watcher import PENDING_TOO_LONG_REASON, NodeWatcher
from flexjob.master.profilings_sync import ProfilingsSync, status_writer
from flexjob.master.service import MasterService
from flexjob.operator.manifests import JOB_MASTER_RULES
from flexjob.platform.kubernetes import KubernetesPlatform
from flexjob.platform.kubernetes.connection import load_configuration
from flexjob.platform.local import LocalPlatform
from flexjob.rpc.messages import NodeRef
from tests.platform.contract import NS, contract_job, worker_request
from tests.support.k8s_fixtures import EmulatorThread, use_kubeconfig
from tests.support.polling import wait_until

#: Far beyond how long the tests wait: only the watcher can hand the shards back in time.
HEARTBEAT_TIMEOUT = 120.0
WAIT = 20.0


def master(job: str, namespace: str = NS) -> MasterService:
    config = MasterConfig(
        job_name=job,
        namespace=namespace,
        datasets=(Dataset(size=100, shard_size=10, epochs=1, shuffle=False),),
        host_store=False,
        node_health=NodeHealthConfig(heartbeat_timeout=HEARTBEAT_TIMEOUT),
    )
    return MasterService(config)


def hand_out(service: MasterService, node_id: str, index: int) -> int:
    shard = service.get_shard(NodeRef(node_id, "worker", index), "")
    assert shard.has_shard
    return shard.shard_id


def last_failure(service: MasterService, node_id: str) -> str:
    nodes, _ = service.stats_snapshot()
    return nodes[node_id].last_failure if node_id in nodes else ""


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalPlatform]:
    platform = LocalPlatform(tmp_path)
    yield platform
    platform.close()


def test_local_replica_that_fails_gives_its_shards_back_and_its_reason_to_the_stats(
    local: LocalPlatform, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    job = contract_job()
    code = (
        "import os, sys, time\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
        "print('CUDA error: device lost', flush=True)\n"
        "sys.exit(3)\n"
    )
    container = Container(name="main", command=[sys.executable, "-c", code])
    job.spec.replica_specs[ReplicaType.WORKER].template.spec.containers = [container]
    local.create_job(job)
    for index in (0, 1):
        local.create_replica(worker_request(job, index))
    service = master("cj")
    kept = hand_out(service, "worker-0", 0)
    lost = [hand_out(service, "worker-1", 1), hand_out(service, "worker-1.1", 1)]
    watcher = NodeWatcher(local, NS, "cj", service, pending_timeout=None, window_s=0.5)
    watcher.start()
    try:
        go.write_text("")  # both replicas exit 3 now
        wait_until(lambda: len(watcher.events) == 2, WAIT, what="both replicas seen gone")
    finally:
        watcher.stop()
    reason = last_failure(service, "worker-1")
    assert reason == "replica worker-1 Failed (exit code 3): CUDA error: device lost"
    # worker-1's shards (its own and its second process's) are handed out again first;
    # worker-0's went back too: it is gone as well.
    again = {hand_out(service, "worker-2", 2) for _ in range(3)}
    assert again == {kept, *lost}


def pod(name: str, index: int, job: str = "j") -> dict[str, Any]:
    labels = {LABEL_JOB_NAME: job, LABEL_REPLICA_TYPE: "worker", LABEL_REPLICA_INDEX: str(index)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "flexjob:latest"}]},
    }


def granted(method: str, path: str, params: dict[str, str]) -> tuple[str, str]:
    """(resource, verb) of an API request, as RBAC sees it."""
    parts = path.strip("/").split("/")
    rest = parts[parts.index("namespaces") + 2 :] if "namespaces" in parts else parts[-1:]
    resource = "/".join([rest[0], *rest[2:3]])
    named = len(rest) >= 2
    verb = {"POST": "create", "PATCH": "patch", "DELETE": "delete", "PUT": "update"}.get(method)
    if verb is None:
        verb = "get" if named else ("watch" if params.get("watch") in ("true", "1") else "list")
    return resource, verb


def test_kubernetes_oom_killed_pod_and_pending_pod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EmulatorThread() as emulator:
        use_kubeconfig(tmp_path / "kubeconfig", emulator.base_url, monkeypatch)
        platform = KubernetesPlatform()
        job = contract_job("j")
        job.metadata.namespace = "ns"
        platform.create_job(job)
        client = kubernetes.client.ApiClient(load_configuration(None, None, None))
        client.user_agent = "the-test"  # its own calls are not the master's
        core = CoreV1Api(client)
        for index in (0, 1, 2):
            core.create_namespaced_pod("ns", pod(f"j-worker-{index}", index))
        for index in (0, 1):
            status = {"status": {"phase": "Running"}}
            core.patch_namespaced_pod_status(f"j-worker-{index}", "ns", status)
        service = master("j", "ns")
        kept = hand_out(service, "worker-0", 0)
        lost = hand_out(service, "worker-1", 1)
        now = [datetime.now(UTC)]
        watcher = NodeWatcher(
            platform, "ns", "j", service, pending_timeout=60.0, window_s=0.5, clock=lambda: now[0]
        )
        first_request = len(emulator._requests)
        watcher.start()
        try:
            terminated = {"reason": "OOMKilled", "exitCode": 137}
            oom = {
                "phase": "Failed",
                "containerStatuses": [
                    {
                        "name": "main",
                        "image": "flexjob:latest",
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "state": {"terminated": terminated},
                    }
                ],
            }
            core.patch_namespaced_pod_status("j-worker-1", "ns", {"status": oom})
            wait_until(lambda: last_failure(service, "worker-1"), WAIT, what="worker-1 gone")
            now[0] += timedelta(seconds=61)  # j-worker-2 has been Pending a minute now

            def pending_event() -> bool:
                events = core.list_namespaced_event("ns").items
                return any(e.reason == PENDING_TOO_LONG_REASON for e in events)

            wait_until(pending_event, WAIT, what="the pending event")
            # The profilings copy of the same master, through the same kind of client.
            write = status_writer("kubernetes", "ns", "j")
            assert write is not None
            ProfilingsSync(lambda key: b'{"speed": 1}', write).tick(force=True)
        finally:
            watcher.stop()
        requests = [
            r
            for r in emulator._requests[first_request:]
            if r.headers.get("User-Agent") != "the-test"
        ]
        stored = platform.get_job("ns", "j")
    assert last_failure(service, "worker-1") == "replica worker-1 OOMKilled (exit code 137)"
    assert hand_out(service, "worker-3", 3) == lost  # back at once, first in line
    assert hand_out(service, "worker-3", 3) not in (kept, lost)
    [pending] = [e for e in watcher.events if e.kind is NodeWatchKind.PENDING_TOO_LONG]
    assert pending.node_id == "worker-2"
    assert stored.status is not None and stored.status.profilings == {"speed": 1}
    rules = {(res, verbs) for _, resources, verbs in JOB_MASTER_RULES for res in resources}
    rules = {(res, verb) for res, verbs in rules for verb in verbs}
    calls = {granted(r.method, r.url.path, r.params) for r in requests}
    assert {("pods", "watch"), ("pods", "list"), ("events", "create")} <= calls
    assert calls <= rules, calls - rules
