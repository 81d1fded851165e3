"""deploy/kustomize: the install a cluster user applies (operator, server, allocator, brain on
PostgreSQL), kept
equal to what ``flexjob manifests install`` generates, rendered by ``kubectl kustomize`` and
applied to the emulated cluster with ``kubectl apply -k``."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from flexjob.api.names import ENV_BRAIN_DB, ENV_BRAIN_TOKEN
from flexjob.operator.manifests import install_manifests
from tests.support.k8s_emulator import K8sEmulator
from tests.support.k8s_fixtures import CERT_MANAGER, REPO, in_thread, use_kubeconfig

BASE = REPO / "deploy" / "kustomize"
KUBECTL = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


def documents(path: Path) -> list[dict[str, object]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_operator_yaml_is_what_flexjob_manifests_install_generates() -> None:
    assert documents(BASE / "operator.yaml") == install_manifests()


def test_server_and_allocator_run_the_operator_image_as_non_root() -> None:
    [operator] = [d for d in install_manifests() if d["kind"] == "Deployment"]
    image = operator["spec"]["template"]["spec"]["containers"][0]["image"]  # type: ignore[index]
    for name in ("server.yaml", "allocator.yaml", "brain.yaml"):
        [deployment] = [d for d in documents(BASE / name) if d["kind"] == "Deployment"]
        spec = deployment["spec"]["template"]["spec"]  # type: ignore[index]
        [container] = spec["containers"]
        assert container["image"] == image
        assert container["securityContext"]["runAsNonRoot"] is True
        assert spec["serviceAccountName"] == deployment["metadata"]["name"]  # type: ignore[index]


def test_the_server_listening_beyond_loopback_requires_its_token() -> None:
    [deployment] = [d for d in documents(BASE / "server.yaml") if d["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]  # type: ignore[index]
    assert "0.0.0.0" in container["args"]
    [token] = [e for e in container["env"] if e["name"] == "FLEXJOB_SERVER_TOKEN"]
    assert token["valueFrom"]["secretKeyRef"]["name"] == "flexjob-server-token"


def test_the_brain_takes_its_token_and_database_url_from_secrets() -> None:
    """Beyond loopback the brain requires its token; the database URL (with PostgreSQL's
    password) is $FLEXJOB_BRAIN_DB from the secret whose password PostgreSQL is set up with."""
    [brain] = [d for d in documents(BASE / "brain.yaml") if d["kind"] == "Deployment"]
    [container] = brain["spec"]["template"]["spec"]["containers"]  # type: ignore[index]
    assert "0.0.0.0" in container["args"] and "--db" not in container["args"]
    env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"]}
    assert env[ENV_BRAIN_TOKEN] == {"name": "flexjob-brain-token", "key": "token"}
    assert env[ENV_BRAIN_DB] == {"name": "flexjob-brain-db", "key": "url"}
    [postgres] = [d for d in documents(BASE / "postgres.yaml") if d["kind"] == "StatefulSet"]
    [db] = postgres["spec"]["template"]["spec"]["containers"]  # type: ignore[index]
    [password] = [e for e in db["env"] if e["name"] == "POSTGRES_PASSWORD"]
    assert password["valueFrom"]["secretKeyRef"] == {"name": "flexjob-brain-db", "key": "password"}
    [service] = [d for d in documents(BASE / "postgres.yaml") if d["kind"] == "Service"]
    assert service["spec"]["selector"] == postgres["spec"]["selector"]["matchLabels"]  # type: ignore[index]


def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, timeout=60)


@KUBECTL
async def test_kubectl_apply_k_installs_everything_on_the_cluster(
    k8s_emulator: K8sEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for kind in CERT_MANAGER:
        k8s_emulator.declare(kind)
    use_kubeconfig(tmp_path / "kubeconfig", k8s_emulator.base_url, monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path))
    rendered = await in_thread(kubectl, "kustomize", str(BASE))
    assert rendered.returncode == 0, rendered.stderr
    wanted = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    applied = await in_thread(kubectl, "apply", "-k", str(BASE))
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.count(" created") == len(wanted)
    deployments = k8s_emulator.store.select(k8s_emulator.kind("apps", "v1", "deployments"), None)
    assert sorted(d["metadata"]["name"] for d in deployments) == [
        "flexjob-allocator",
        "flexjob-brain",
        "flexjob-operator",
        "flexjob-server",
    ]
    statefulsets = k8s_emulator.store.select(k8s_emulator.kind("apps", "v1", "statefulsets"), None)
    assert [s["metadata"]["name"] for s in statefulsets] == ["flexjob-postgres"]
