"""kubectl against the emulated cluster, as a user installs flexjob and manages a job.

``flexjob manifests install`` piped to ``kubectl apply``; a job YAML applied (the operator's
webhooks default it, refuse a bad one); ``kubectl get`` with the CRD's printer columns and
short names; ``kubectl describe``; ``kubectl delete`` waits for the operator's finalizer.
kubectl comes from the system (``.ci/kubectl.sh`` installs it in CI).
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from flexjob.api import JobPhase
from flexjob.operator.manifests import NAME, InstallConfig
from tests.operator.kopf_fixtures import OperatorHarness
from tests.support.k8s_emulator import wait_for
from tests.support.k8s_fixtures import ELASTICJOBS, REPO, in_thread, use_kubeconfig

pytestmark = [
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
    pytest.mark.timeout(90),
]
SPEC = REPO / "examples" / "specs" / "digits-elastic.yaml"
NAMESPACE = InstallConfig().namespace
PHASES = {phase.value for phase in JobPhase}


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=60)


async def kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return await in_thread(run, "kubectl", *args, stdin=stdin)


@pytest.fixture
async def installed(
    operator_with_image: OperatorHarness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> OperatorHarness:
    """``flexjob manifests install --no-cert-manager | kubectl apply -f -``; the webhook
    service's endpoints are the test's operator (the Deployment has no kubelet to run it),
    which runs job masters, as the Deployment does (``FLEXJOB_IMAGE``)."""
    operator = operator_with_image
    use_kubeconfig(tmp_path / "kubeconfig", operator.emulator.base_url, monkeypatch)
    monkeypatch.setenv("KUBECACHEDIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path))
    manifests = run(sys.executable, "-m", "flexjob", "manifests", "install", "--no-cert-manager")
    assert manifests.returncode == 0, manifests.stderr
    applied = await kubectl("apply", "-f", "-", stdin=manifests.stdout)
    assert applied.returncode == 0, applied.stderr
    assert "customresourcedefinition.apiextensions.k8s.io/elasticjobs.flexjob.dev created" in (
        applied.stdout
    )
    assert "deployment.apps/flexjob-operator created" in applied.stdout
    await operator.serve_webhooks_for(NAMESPACE, NAME)
    return operator


async def apply_job(text: str) -> subprocess.CompletedProcess[str]:
    async def answered() -> subprocess.CompletedProcess[str] | None:
        out = await kubectl("apply", "-f", "-", stdin=text)
        return None if "failed calling webhook" in out.stderr else out  # still starting

    result: subprocess.CompletedProcess[str] = await wait_for(answered, 20)
    return result


async def test_install_apply_get_describe_delete(installed: OperatorHarness) -> None:
    out = await apply_job(SPEC.read_text())
    assert out.stdout.strip() == "elasticjob.flexjob.dev/digits-elastic created", out.stderr

    async def phase_shown() -> str | None:
        got = await kubectl("get", "elasticjobs")
        rows = got.stdout.splitlines()
        return got.stdout if len(rows) == 2 and rows[1].split()[1] in PHASES else None

    header, row = (await wait_for(phase_shown, 20)).splitlines()
    assert header.split() == ["NAME", "PHASE", "WORKERS", "AGE"]
    assert row.split()[0] == "digits-elastic"
    stored = installed.emulator.store.get(ELASTICJOBS, "default", "digits-elastic")
    assert row.split()[1] == stored["status"]["phase"]
    short = await kubectl("get", "ej", "digits-elastic", "-o", "yaml")
    job = yaml.safe_load(short.stdout)
    assert (
        job["spec"]["replicaSpecs"]["worker"]["template"]["spec"]["containers"][0]["name"] == "main"
    )
    assert job["spec"]["cleanPodPolicy"] == "Running"  # the mutating webhook's defaults kept
    described = await kubectl("describe", "elasticjob", "digits-elastic")
    assert described.returncode == 0, described.stderr
    assert "Kind:         ElasticJob" in described.stdout
    assert re.search(r"Rdzv Backend:\s+flexjob", described.stdout), described.stdout
    # the job's Events: one SuccessfulCreate for both workers
    assert "created 2 worker replicas: digits-elastic-worker-0, digits-elastic-worker-1" in (
        described.stdout
    )
    deleted = await kubectl("delete", "ej", "digits-elastic", "--timeout=30s")
    assert deleted.stdout.strip() == 'elasticjob.flexjob.dev "digits-elastic" deleted', (
        deleted.stderr
    )
    gone = await kubectl("get", "ej")
    assert "No resources found" in gone.stderr


async def test_applying_a_bad_job_is_refused_naming_the_field(installed: OperatorHarness) -> None:
    bad = yaml.safe_load(SPEC.read_text())
    bad["spec"]["cleanPodPolicy"] = "Sometimes"
    out = await apply_job(yaml.safe_dump(bad))
    assert out.returncode != 0
    assert "spec.cleanPodPolicy" in out.stderr
    assert "denied the request" in out.stderr


async def test_kubectl_scale_sets_the_workers_and_the_operator_follows(
    installed: OperatorHarness,
) -> None:
    out = await apply_job(SPEC.read_text())
    assert out.returncode == 0, out.stderr
    scaled = await kubectl("scale", "ej/digits-elastic", "--replicas=3")
    assert scaled.stdout.strip() == "elasticjob.flexjob.dev/digits-elastic scaled", scaled.stderr
    stored = installed.emulator.store.get(ELASTICJOBS, "default", "digits-elastic")
    assert stored["spec"]["replicaSpecs"]["worker"]["replicas"] == 3
    pods = installed.emulator.kind("", "v1", "pods")

    def third_worker() -> bool:
        names = {p["metadata"]["name"] for p in installed.emulator.store.select(pods, "default")}
        return "digits-elastic-worker-2" in names

    assert await wait_for(third_worker, 30)
    shown = await kubectl(
        "get", "ej", "digits-elastic", "-o", "jsonpath={.spec.replicaSpecs.worker.replicas}"
    )
    assert shown.stdout == "3"
    await kubectl("delete", "ej", "digits-elastic", "--timeout=30s")


async def test_the_scale_subresource_names_the_selector_of_the_workers_pods(
    installed: OperatorHarness,
) -> None:
    """What an HPA reads: ``status.selector`` of the job's Scale selects its worker pods."""
    out = await apply_job(SPEC.read_text())
    assert out.returncode == 0, out.stderr
    path = "/apis/flexjob.dev/v1alpha1/namespaces/default/elasticjobs/digits-elastic/scale"

    scales: list[dict[str, Any]] = []

    async def selector() -> str | None:
        got = await kubectl("get", "--raw", path)
        if got.returncode != 0:  # not served yet: polled again
            return None
        scales.append(json.loads(got.stdout))
        return scales[-1]["status"].get("selector")

    chosen = await wait_for(selector, 60, 0.2)
    assert scales[-1]["kind"] == "Scale" and scales[-1]["spec"]["replicas"] == 2
    pods = installed.emulator.kind("", "v1", "pods")
    workers = {"digits-elastic-worker-0", "digits-elastic-worker-1"}
    selected: set[str] = set()

    def selects_the_workers() -> bool:  # the selector may be served before the pods exist
        selected.clear()
        selected.update(
            p["metadata"]["name"] for p in installed.emulator.store.select(pods, "default", chosen)
        )
        return selected == workers

    await wait_for(selects_the_workers, 60, 0.2)
    assert selected == workers
    await kubectl("delete", "ej", "digits-elastic", "--timeout=30s")


async def test_kubectl_scale_after_a_scale_plan_wins(installed: OperatorHarness) -> None:
    """``flexjob scale`` (a ScalePlan, in ``status.replicas``) grows the job to three workers;
    a later ``kubectl scale`` to one (the scale subresource's spec) is the newer intent: the
    job shrinks to one worker."""
    body = yaml.safe_load(SPEC.read_text())
    body["spec"]["replicaSpecs"]["worker"]["minReplicas"] = 1
    out = await apply_job(yaml.safe_dump(body))
    assert out.returncode == 0, out.stderr
    pods = installed.emulator.kind("", "v1", "pods")

    def workers() -> set[str]:
        listed = installed.emulator.store.select(pods, "default", "flexjob.dev/replica-type=worker")
        return {p["metadata"]["name"] for p in listed if not p["metadata"].get("deletionTimestamp")}

    planned = await in_thread(
        run, sys.executable, "-m", "flexjob", "scale", "digits-elastic", "--worker", "3",
        "--platform", "kubernetes",
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    assert await wait_for(lambda: len(workers()) == 3, 30)
    scaled = await kubectl("scale", "ej/digits-elastic", "--replicas=1")
    assert scaled.returncode == 0, scaled.stderr
    assert await wait_for(lambda: workers() == {"digits-elastic-worker-0"}, 30)

    def planned_count() -> object:  # the pass deletes the pods, then writes the job's status
        stored = installed.emulator.store.get(ELASTICJOBS, "default", "digits-elastic")
        return (stored["status"].get("replicas") or {}).get("worker")

    await wait_for(lambda: planned_count() is None, 30)
    assert planned_count() is None
    await kubectl("delete", "ej", "digits-elastic", "--timeout=30s")
