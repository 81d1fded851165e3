"""The Python SDK on Kubernetes (the emulator, with the kopf operator running): a job created
from a dict gets its pods, scales through a ScalePlan, reports its phase, and is deleted."""

from flexjob.api import JobPhase
from flexjob.client import FlexjobClient
from tests.operator.kopf_fixtures import OperatorHarness
from tests.operator.test_kopf_e2e import DEADLINE, job_body, set_pod_phase
from tests.support.k8s_emulator import wait_for
from tests.support.k8s_fixtures import in_thread


async def test_client_creates_scales_watches_and_deletes_a_job(operator: OperatorHarness) -> None:
    client = FlexjobClient(operator.platform)
    await in_thread(client.create_job, job_body("sdk", workers=1))

    async def workers(count: int) -> bool:
        replicas = await in_thread(client.list_replicas, "sdk")
        return sum("-worker-" in r.name for r in replicas) == count

    await wait_for(lambda: workers(1), DEADLINE)
    await in_thread(client.scale_job, "sdk", worker=2)
    await wait_for(lambda: workers(2), DEADLINE)
    for name in ("sdk-master-0", "sdk-worker-0", "sdk-worker-1"):
        await set_pod_phase(operator, name, "Running")
    running = await in_thread(
        client.wait_for_job, "sdk", phases=(JobPhase.RUNNING,), timeout=DEADLINE
    )
    assert running.status is not None and running.status.phase is JobPhase.RUNNING
    await in_thread(client.delete_job, "sdk")

    async def gone() -> bool:
        return not [j for j in await in_thread(client.list_jobs) if j.name == "sdk"]

    await wait_for(gone, DEADLINE)
