"""A running job on the Kubernetes path is scraped as Prometheus scrapes it: its master's and
agents' /metrics on each pod's address at the annotated port, with the token of the
namespace's Secret; without the token a scrape is refused."""

import base64
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from kubernetes.client import CoreV1Api
from kubernetes.client.exceptions import ApiException

from flexjob.api.names import METRICS_PORT
from tests.e2e.k8s_cluster import cluster, digits_job
from tests.support.k8s_emulator import wait_for
from tests.support.k8s_fixtures import in_thread

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]
NAME = "digits-elastic"


def scrape(url: str, token: str | None) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return str(response.read().decode())
    except (urllib.error.URLError, OSError) as exc:
        return f"error: {exc}"


def metrics_token(core: CoreV1Api) -> str | None:
    """The namespace's job metrics token, None until the operator made its Secret."""
    try:
        secret = core.read_namespaced_secret("flexjob-job-metrics", "default")
    except ApiException:
        return None
    if secret.string_data:
        return str(secret.string_data["token"])
    return base64.b64decode(secret.data["token"]).decode()


async def test_a_running_jobs_master_and_agent_pods_are_scraped_with_the_token(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path) as c:
        await c.apply_job(digits_job(epochs=3, step_delay=0.02))
        token = await wait_for(lambda: in_thread(metrics_token, c.core), 60, 0.2)
        wanted = {
            f"{NAME}-master-0": "flexjob_master_samples_total{",
            f"{NAME}-worker-0": "flexjob_agent_samples_total{",
            f"{NAME}-worker-1": "flexjob_agent_samples_total{",
        }
        texts: dict[str, str] = {}
        for pod, family in wanted.items():
            url = f"http://{c.kubelet.pod_ip('default', pod)}:{METRICS_PORT}/metrics"

            async def has_family(url: str = url, pod: str = pod, family: str = family) -> bool:
                texts[pod] = await in_thread(scrape, url, token)
                return family in texts[pod]

            await wait_for(has_family, 90, 0.5)
            refused = await in_thread(scrape, url, None)
            assert "401" in refused, refused
        assert f'job_name="{NAME}"' in texts[f"{NAME}-master-0"]
        phase = await c.wait_phase(NAME, ("Succeeded", "Failed"), 120)
        assert phase == "Succeeded"
