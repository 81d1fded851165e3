"""DI-engine 0.5.3's own client against a real ``flexjob server`` over the local platform: a
DIJob v1 starts with its coordinator alone, which finds the server in its environment; the
client adds and removes collectors and learners; every address it gets back answers; a killed
collector comes back without failing the job; the job Succeeds when the coordinator exits 0."""

import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from flexjob.api import ElasticJob, JobPhase
from flexjob.api.defaults import apply_defaults
from flexjob.api.load import job_from_dict
from flexjob.operator.local.loop import LocalJobLoop
from flexjob.platform.local import LocalPlatform
from tests.support.ding_client import operator_server_class
from tests.support.manifests import manifest
from tests.support.polling import wait_until
from tests.support.server_process import flexjob_server

# A DI role as a real process: records its environment and pid, serves its pod name on its
# port until the stop file exists, then exits 0.
ROLE = """
import json, os, pathlib, socket, sys, time
out, stop, port_env = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
name = os.environ["KUBERNETES_POD_NAME"]
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(os.environ[port_env]))); s.listen(); s.settimeout(0.05)
env = {k: v for k, v in os.environ.items() if k.startswith("KUBERNETES_") or k.endswith("_PORT")}
(out / f".{name}.tmp").write_text(json.dumps({"pid": os.getpid(), "env": env}))
(out / f".{name}.tmp").rename(out / f"{name}.json")  # the test reads it once it exists
end = time.time() + 120
while not stop.exists() and time.time() < end:
    try:
        conn, _ = s.accept()
    except OSError:
        continue
    conn.sendall(name.encode()); conn.close()
sys.exit(0 if stop.exists() else 1)
"""


def dijob(out: Path, stop: Path) -> ElasticJob:
    def role(name: str, port_env: str) -> dict[str, Any]:
        command = [sys.executable, "-c", ROLE, str(out), str(stop), port_env]
        container = {"name": name, "image": "ignored-locally", "command": command}
        return {"template": {"spec": {"containers": [container]}}}

    roles = {
        name: role(name, f"{name.upper()}_PORT") for name in ("coordinator", "collector", "learner")
    }
    raw = manifest("DIJob", "cp", roles, api_version="diengine.opendilab.org/v1alpha1")
    return apply_defaults(job_from_dict(raw))


def answers(address: str) -> str:
    host, _, port = address.partition(":")
    with socket.create_connection((host, int(port)), timeout=2) as conn:
        return conn.recv(100).decode()


@contextmanager
def driven(
    tmp_path: Path, token: str | None = None
) -> Iterator[tuple[str, LocalPlatform, Path, Path]]:
    """The DIJob run by the local operator loop next to a real ``flexjob server`` (with
    ``token``, the operator knows it too); the server URL, platform, out dir and stop file."""
    home, out, stop = tmp_path / "home", tmp_path / "out", tmp_path / "stop"
    out.mkdir()
    platform = LocalPlatform(home)
    with flexjob_server(home, token=token) as url:
        platform.create_job(dijob(out, stop))
        loop = LocalJobLoop(
            platform, "default", "cp", interval=0.05, server_url=url, server_token=token
        )
        halt = threading.Event()
        thread = threading.Thread(target=loop.run, args=(halt,), daemon=True)
        thread.start()
        try:
            yield url, platform, out, stop
        finally:
            stop.touch()
            thread.join(timeout=60)
            halt.set()
            for job in platform.list_jobs(None):
                platform.delete_job(job.namespace, job.name)
            platform.close()


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[str, LocalPlatform, Path, Path]]:
    with driven(tmp_path) as started:
        yield started


def record(out: Path, name: str) -> dict[str, Any]:
    path = out / f"{name}.json"
    wait_until(path.exists, timeout=30, what=f"{name} started")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_di_engines_client_scales_a_dijob_through_the_server(
    running: tuple[str, LocalPlatform, Path, Path], tmp_path: Path
) -> None:
    url, platform, out, stop = running
    coordinator = record(out, "cp-coordinator-0")["env"]
    assert coordinator["KUBERNETES_SERVER_URL"] == url
    assert coordinator["KUBERNETES_POD_NAMESPACE"] == "default"
    assert coordinator["KUBERNETES_SERVER_API_VERSION"] == "v1alpha2"
    assert [r.name for r in platform.list_replicas("default", "cp")] == ["cp-coordinator-0"]

    with operator_server_class(tmp_path / "ding") as OperatorServer:
        server_url = urlsplit(coordinator["KUBERNETES_SERVER_URL"])
        client = OperatorServer(
            server_url.hostname,
            server_url.port,
            api_version=coordinator["KUBERNETES_SERVER_API_VERSION"],
            namespace=coordinator["KUBERNETES_POD_NAMESPACE"],
            name=coordinator["KUBERNETES_POD_NAME"],
        )
        client.set_worker_type("coordinator")
        success, code, message, created = client.post_replicas(
            {"collectors": {"replicas": 2}, "learners": {"replicas": 1}}
        )
        assert (success, code) == (True, 0), message

        def listed(collectors: int, learners: int) -> dict[str, Any] | None:
            ok, _, _, data = client.get_replicas()
            shape = (len(data["collectors"]), len(data["learners"])) if ok else None
            return data if shape == (collectors, learners) else None

        data = wait_until(lambda: listed(2, 1), timeout=60, what="2 collectors, 1 learner")
        for name in ("cp-collector-0", "cp-collector-1", "cp-learner-0"):
            record(out, name)  # listening (DI's coordinator retries its connections)
        names = {answers(a) for a in data["collectors"] + data["learners"]}
        assert names == {"cp-collector-0", "cp-collector-1", "cp-learner-0"}
        # the create's own answer: the new replicas' addresses, as di-server gives them
        assert {answers(a) for a in created["collectors"] + created["learners"]} == names

        success, code, message, _ = client.delete_replicas(n_collectors=1)
        assert (success, code) == (True, 0), message
        data = wait_until(lambda: listed(1, 1), timeout=60, what="1 collector left")
        assert answers(data["collectors"][0]) == "cp-collector-0"

        killed = record(out, "cp-collector-0")["pid"]
        (out / "cp-collector-0.json").unlink()
        os.kill(killed, signal.SIGKILL)
        back = record(out, "cp-collector-0")
        assert back["pid"] != killed
        data = wait_until(lambda: listed(1, 1), timeout=60, what="the collector back")
        wait_until(lambda: answers(data["collectors"][0]) == "cp-collector-0", timeout=30)
        job = platform.get_job("default", "cp")
        assert job.status is not None
        assert job.status.phase is JobPhase.RUNNING
        assert job.status.restart_count == 0

    stop.touch()
    wait_until(
        lambda: platform.get_job("default", "cp").status.phase is JobPhase.SUCCEEDED,  # type: ignore[union-attr]
        timeout=60,
        what="the job Succeeded with its coordinator",
    )


def test_di_engines_client_reaches_a_server_with_a_token_through_its_jobs_key(
    tmp_path: Path,
) -> None:
    """The operator gives the roles the server's URL with their job's key (the server has a
    token; DI's client sends no header); the client built from that environment as DI builds
    it scales the job; without the key it is refused."""
    token = "a-server-token"
    with driven(tmp_path, token) as (url, _, out, _):
        env = record(out, "cp-coordinator-0")["env"]
        assert env["KUBERNETES_SERVER_URL"].startswith(f"{url}/di/")
        assert env["KUBERNETES_SERVER_API_VERSION"].endswith("/v1alpha2")
        assert token not in json.dumps(env)
        with operator_server_class(tmp_path / "ding") as OperatorServer:
            import requests  # DI's client needs it: operator_server_class checked it is there

            server = urlsplit(env["KUBERNETES_SERVER_URL"])  # DI keeps host and port

            def client(api_version: str) -> Any:
                made = OperatorServer(
                    server.hostname,
                    server.port,
                    api_version=api_version,
                    namespace=env["KUBERNETES_POD_NAMESPACE"],
                    name=env["KUBERNETES_POD_NAME"],
                )
                made.set_worker_type("coordinator")
                return made

            keyed = client(env["KUBERNETES_SERVER_API_VERSION"])
            success, code, message, _ = keyed.post_replicas({"collectors": {"replicas": 1}})
            assert (success, code) == (True, 0), message
            record(out, "cp-collector-0")
            ok, _, _, data = keyed.get_replicas()
            assert ok and len(data["collectors"]) == 1
            assert answers(data["collectors"][0]) == "cp-collector-0"
            with pytest.raises(requests.RequestException):
                client("v1alpha2").get_replicas()  # no key, no header: 401
