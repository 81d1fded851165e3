import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil
import pytest

from flexjob.brain.monitor import KubernetesSource, LocalSource, run_monitor
from flexjob.platform.local import LocalPlatform
from flexjob.rpc.brain_client import BrainClient
from tests.platform.contract import contract_job

NODES = {
    "kind": "NodeList",
    "apiVersion": "v1",
    "metadata": {},
    "items": [
        {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}},
        {"metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": "8", "memory": "16Gi"}}},
    ],
}


def _pod(name: str, node: str, cpu: str, memory: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
            ],
        },
        "status": {"phase": "Running"},
    }


PODS = {
    "kind": "PodList",
    "apiVersion": "v1",
    "metadata": {},
    "items": [_pod("a", "n1", "500m", "1Gi"), _pod("b", "n1", "1", "512Mi")],
}


class _Api(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = NODES if self.path.startswith("/api/v1/nodes") else PODS
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def core_v1() -> Iterator[Any]:
    """The real kubernetes client against a tiny API server that serves nodes and pods."""
    from kubernetes import client

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield client.CoreV1Api(client.ApiClient(cfg))
    finally:
        server.shutdown()
        server.server_close()


def test_local_source_reports_this_machine() -> None:
    [node] = LocalSource(clock=lambda: 7.0).sample()
    assert node.name == socket.gethostname() and node.timestamp == 7.0
    assert node.cpu_capacity == psutil.cpu_count()
    assert 0 < node.memory_used_mb < node.memory_capacity_mb


def test_kubernetes_source_sums_running_pod_requests_per_node(core_v1: Any) -> None:
    nodes = {n.name: n for n in KubernetesSource(core_v1).sample()}
    assert (nodes["n1"].cpu_capacity, nodes["n1"].memory_capacity_mb) == (4.0, 8192.0)
    assert (nodes["n1"].cpu_used, nodes["n1"].memory_used_mb, nodes["n1"].pods) == (1.5, 1536, 2)
    assert (nodes["n2"].cpu_used, nodes["n2"].pods) == (0.0, 0)


def test_monitor_keeps_going_when_the_brain_is_down() -> None:
    down = BrainClient("http://127.0.0.1:9", timeout=0.2)
    assert run_monitor(LocalSource(), down, interval=0.01, iterations=2) == 0


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_monitor_command_reports_this_machine_to_the_brain(
    brain_process: tuple[subprocess.Popen[str], str],
    tmp_path: Path,
) -> None:
    _, url = brain_process
    home = tmp_path / "home"
    platform = LocalPlatform(home)
    platform.create_job(contract_job("cj"))
    platform.close()
    cmd = [sys.executable, "-m", "flexjob", "monitor", "--brain", url, "--interval", "0.1"]
    env = {**os.environ, "FLEXJOB_HOME": str(home)}
    out = subprocess.run(
        [*cmd, "--count", "2"], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode == 0, out.stderr
    assert "2 reports sent" in out.stdout
    [node] = BrainClient(url).cluster_nodes()
    assert node.name == socket.gethostname() and node.platform == "local"
    [job] = BrainClient(url).cluster_jobs()
    assert (job.name, job.phase, job.platform) == ("default/cj", "Pending", "local")
    platform = LocalPlatform(home)
    platform.create_job(contract_job("later"))
    platform.close()
    nodes_only = [*cmd, "--count", "1", "--no-jobs"]
    out = subprocess.run(nodes_only, capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert [j.name for j in BrainClient(url).cluster_jobs()] == ["default/cj"]
