"""The process kubelet runs pods as processes and reports them as a kubelet does."""

from typing import Any

import pytest
from kubernetes.client import ApiClient, CoreV1Api

from tests.support.k8s_emulator import K8sEmulator, wait_for
from tests.support.k8s_fixtures import in_thread
from tests.support.k8s_kubelet import ProcessKubelet, pods_on

pytestmark = pytest.mark.timeout(60)
DEADLINE = 20.0


def pod(name: str, script: str, **extra: Any) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": "flexjob:latest",
        "command": ["python", "-c", script],
        **extra.pop("container", {}),
    }
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container], **extra}
    labels = {"app": name}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }


async def create(client: ApiClient, body: dict[str, Any]) -> None:
    await in_thread(CoreV1Api(client).create_namespaced_pod, "default", body)


def status(emulator: K8sEmulator, name: str) -> dict[str, Any]:
    try:
        body = emulator.store.get(emulator.kind("", "v1", "pods"), "default", name)
    except Exception:
        return {}
    return body.get("status") or {}


def terminated(emulator: K8sEmulator, name: str) -> dict[str, Any] | None:
    for container in status(emulator, name).get("containerStatuses") or []:
        state = (container.get("state") or {}).get("terminated")
        if state:
            return state  # type: ignore[no-any-return]
    return None


async def ended(emulator: K8sEmulator, name: str) -> dict[str, Any]:
    result: dict[str, Any] = await wait_for(lambda: terminated(emulator, name), DEADLINE)
    return result


async def run_to_end(
    k8s_client: ApiClient, k8s_emulator: K8sEmulator, name: str, code: str, **pod_fields: Any
) -> dict[str, Any]:
    """Pod ``name`` running the Python ``code``, created and waited for: its container's
    ``terminated`` state."""
    await create(k8s_client, pod(name, code, **pod_fields))
    return await ended(k8s_emulator, name)


async def test_a_pod_runs_on_its_address_and_succeeds_with_its_log(
    kubelet: ProcessKubelet, k8s_client: ApiClient, k8s_emulator: K8sEmulator
) -> None:
    hello = "import os; print('hi from', os.environ['HOSTNAME'])"
    state = await run_to_end(k8s_client, k8s_emulator, "hello", hello)
    assert (state["exitCode"], state["reason"]) == (0, "Completed")
    final = status(k8s_emulator, "hello")
    assert final["phase"] == "Succeeded"
    assert final["podIP"] == kubelet.pod_ip("default", "hello") != "127.0.0.1"
    log = await in_thread(CoreV1Api(k8s_client).read_namespaced_pod_log, "hello", "default")
    assert log == "hi from hello\n"


async def test_a_failing_pod_reports_its_exit_code_and_error(
    kubelet: ProcessKubelet, k8s_client: ApiClient, k8s_emulator: K8sEmulator
) -> None:
    state = await run_to_end(k8s_client, k8s_emulator, "bad", "raise SystemExit(3)")
    assert (state["exitCode"], state["reason"]) == (3, "Error")
    assert status(k8s_emulator, "bad")["phase"] == "Failed"


SERVER = """
import os, socket
s = socket.socket(); s.bind(('0.0.0.0', 0)); s.listen()
print(s.getsockname()[0], flush=True)
open(os.environ['PORT_FILE'], 'w').write(str(s.getsockname()[1]))
conn, _ = s.accept(); conn.sendall(b'pong from ' + os.environ['ME'].encode()); conn.close()
"""
CLIENT = """
import os, socket, sys
host = sys.argv[1]
port = int(open(os.environ['PORT_FILE']).read())
print(socket.create_connection((host, port)).recv(100).decode(), os.environ['WHERE'])
"""


async def test_service_names_and_the_downward_api_resolve_to_the_pods(
    kubelet: ProcessKubelet, k8s_client: ApiClient, k8s_emulator: K8sEmulator, tmp_path: Any
) -> None:
    port_file = str(tmp_path / "port")
    field = {"fieldRef": {"fieldPath": "metadata.name"}}
    server_env = [{"name": "PORT_FILE", "value": port_file}, {"name": "ME", "valueFrom": field}]
    server = pod(
        "server", SERVER.replace("'0.0.0.0'", "sys.argv[1]").replace("import os", "import os, sys")
    )
    server["spec"]["containers"][0]["args"] = ["0.0.0.0"]
    server["spec"]["containers"][0]["env"] = server_env
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "srv"},
        "spec": {"clusterIP": "None", "selector": {"app": "server"}, "ports": [{"port": 1}]},
    }
    await in_thread(CoreV1Api(k8s_client).create_namespaced_service, "default", service)
    await create(k8s_client, server)
    await wait_for(lambda: (tmp_path / "port").exists(), DEADLINE)
    ip = {"fieldRef": {"fieldPath": "status.podIP"}}
    client_env = [
        {"name": "PORT_FILE", "value": port_file},
        {"name": "MY_IP", "valueFrom": ip},
        {"name": "WHERE", "value": "at $(MY_IP)"},
    ]
    client = pod("client", CLIENT, container={"args": ["srv.default.svc"], "env": client_env})
    await create(k8s_client, client)
    state = await ended(k8s_emulator, "client")
    log = k8s_emulator.store.logs["default", "client"]
    assert state["exitCode"] == 0, log
    assert log == f"pong from server at {kubelet.pod_ip('default', 'client')}\n"
    assert (
        k8s_emulator.store.logs["default", "server"] == kubelet.pod_ip("default", "server") + "\n"
    )


async def test_a_container_over_its_memory_limit_is_oom_killed(
    kubelet: ProcessKubelet, k8s_client: ApiClient, k8s_emulator: K8sEmulator
) -> None:
    if not kubelet.memory_limits:
        pytest.skip("memory cgroups cannot be made on this machine")
    hog = "x = bytearray(400 * 2**20); x[::4096] = b'a' * len(x[::4096]); print('survived')"
    limits = {"resources": {"limits": {"memory": "100Mi"}}}
    state = await run_to_end(k8s_client, k8s_emulator, "hog", hog, container=limits)
    assert (state["exitCode"], state["reason"]) == (137, "OOMKilled")
    assert status(k8s_emulator, "hog")["phase"] == "Failed"


TRAPS_TERM = """
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: (print('got SIGTERM', flush=True), sys.exit(0)))
print('ready', flush=True)
time.sleep(60)
"""
IGNORES_TERM = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print('ready', flush=True)
time.sleep(60)
"""


async def test_deleting_a_running_pod_sends_sigterm_then_removes_it(
    kubelet: ProcessKubelet, k8s_client: ApiClient, k8s_emulator: K8sEmulator
) -> None:
    await create(k8s_client, pod("polite", TRAPS_TERM))
    await wait_for(
        lambda: "ready" in k8s_emulator.store.logs.get(("default", "polite"), ""), DEADLINE
    )
    await in_thread(CoreV1Api(k8s_client).delete_namespaced_pod, "polite", "default")
    assert status(k8s_emulator, "polite")["phase"] == "Running"  # terminating, not gone yet
    await wait_for(lambda: not status(k8s_emulator, "polite"), DEADLINE)
    assert "got SIGTERM" in k8s_emulator.store.logs["default", "polite"]


async def test_a_pod_ignoring_sigterm_is_killed_after_its_grace_period(
    kubelet: ProcessKubelet, k8s_client: ApiClient, k8s_emulator: K8sEmulator
) -> None:
    await create(k8s_client, pod("stubborn", IGNORES_TERM, terminationGracePeriodSeconds=1))
    await wait_for(lambda: kubelet.pid("default", "stubborn"), DEADLINE)
    await wait_for(
        lambda: "ready" in k8s_emulator.store.logs.get(("default", "stubborn"), ""), DEADLINE
    )
    pid = kubelet.pid("default", "stubborn")
    await in_thread(CoreV1Api(k8s_client).delete_namespaced_pod, "stubborn", "default")
    await wait_for(lambda: not status(k8s_emulator, "stubborn"), DEADLINE)
    assert pid is not None and not _alive(pid)


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_pods_spread_over_nodes_follow_node_selectors_and_a_lost_node_fails_its_pods(
    kubelet: ProcessKubelet, k8s_client: ApiClient, k8s_emulator: K8sEmulator
) -> None:
    sleeper = "import time; print('up', flush=True); time.sleep(60)"
    pinned = pod("pinned", sleeper, nodeSelector={"kubernetes.io/hostname": "node-2"})
    await create(k8s_client, pinned)
    await wait_for(lambda: status(k8s_emulator, "pinned").get("phase") == "Running", DEADLINE)
    for name in ("a", "b"):
        await create(k8s_client, pod(name, sleeper))
    await wait_for(
        lambda: all(status(k8s_emulator, n).get("phase") == "Running" for n in "ab"), DEADLINE
    )
    assert [p["metadata"]["name"] for p in pods_on(k8s_emulator, "node-2")] == ["pinned"]
    assert {len(pods_on(k8s_emulator, n)) for n in ("node-0", "node-1")} == {1}
    pid = kubelet.pid("default", "pinned")
    await kubelet.lose_node("node-2")
    final = status(k8s_emulator, "pinned")
    assert (final["phase"], final["reason"]) == ("Failed", "NodeLost")
    assert pid is not None and not _alive(pid)
    again = pod("again", sleeper, nodeSelector={"kubernetes.io/hostname": "node-2"})
    await create(k8s_client, again)
    await wait_for(lambda: status(k8s_emulator, "again").get("conditions"), DEADLINE)
    assert status(k8s_emulator, "again")["conditions"][0]["reason"] == "Unschedulable"


def claim(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


#: A container that writes, reads back and prints what it finds under its mount path.
STATE = (
    "import os, sys, pathlib; d = pathlib.Path(os.environ['STATE_DIR']); "
    "(d / 'seen').open('a').write(os.environ['HOSTNAME'] + ' '); "
    "print(sys.argv[1], d, (d / 'seen').read_text())"
)


def claim_pod(name: str, claim_name: str) -> dict[str, Any]:
    mount = {"name": "state", "mountPath": "/var/lib/state"}
    container = {
        "command": ["python", "-c", STATE, "/var/lib/state/sub"],
        "env": [{"name": "STATE_DIR", "value": "/var/lib/state"}],
        "volumeMounts": [mount],
    }
    volume = {"name": "state", "persistentVolumeClaim": {"claimName": claim_name}}
    return pod(name, STATE, container=container, volumes=[volume])


async def test_a_claim_is_bound_to_a_volume_that_outlives_its_pods_and_a_pod_waits_for_it(
    kubelet: ProcessKubelet, k8s_client: ApiClient, k8s_emulator: K8sEmulator
) -> None:
    core = CoreV1Api(k8s_client)
    await create(k8s_client, claim_pod("early", "later"))  # its claim does not exist yet
    condition = await wait_for(
        lambda: (status(k8s_emulator, "early").get("conditions") or [None])[0]
    )
    assert (condition["reason"], condition["message"]) == (
        "Unschedulable",
        "persistentvolumeclaim 'later' not found or unbound",
    )
    assert status(k8s_emulator, "early")["phase"] == "Pending"
    await in_thread(core.create_namespaced_persistent_volume_claim, "default", claim("later"))
    assert (await ended(k8s_emulator, "early"))["exitCode"] == 0
    bound = await in_thread(core.read_namespaced_persistent_volume_claim, "later", "default")
    assert (bound.status.phase, bound.status.capacity) == ("Bound", {"storage": "1Gi"})
    directory = kubelet.claim_directory("default", "later")
    assert directory == str(kubelet.volume_dir / f"pvc-{bound.metadata.uid}")
    # a second pod on the same claim sees what the first one wrote: the same volume
    await create(k8s_client, claim_pod("again", "later"))
    assert (await ended(k8s_emulator, "again"))["exitCode"] == 0
    log = await in_thread(core.read_namespaced_pod_log, "again", "default")
    # the mount path in its argv and env became the volume's directory
    assert log == f"{directory}/sub {directory} early again \n"
