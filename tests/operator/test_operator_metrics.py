"""The kopf operator's /metrics on the emulator: reconcile latency, queue depth, replicas of a
job by phase, errors — scraped and parsed with prometheus_client's parser."""

from flexjob.api.names import LABEL_JOB_NAME
from flexjob.platform.ports import free_port
from tests.operator.kopf_fixtures import running_operator
from tests.operator.test_kopf_e2e import create_job, job_body
from tests.support.k8s_emulator import K8sEmulator, wait_for
from tests.support.metrics import dashboard_metrics, scrape, value


async def test_operator_metrics_count_passes_and_replicas_by_phase(
    k8s_emulator: K8sEmulator,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    async with running_operator(k8s_emulator, metrics_addr=f"127.0.0.1:{port}") as op:
        await create_job(op, job_body("seen", workers=2))

        async def three_pods() -> bool:
            pods = await op.core(
                "list_namespaced_pod", "default", label_selector=f"{LABEL_JOB_NAME}=seen"
            )
            return len(pods.items) == 3

        await wait_for(three_pods, 15.0)

        async def counted() -> bool:
            got = scrape(url)
            pending = value(got, "flexjob_operator_replicas", job_name="seen", phase="Pending")
            return pending == 3

        await wait_for(counted, 15.0)
        got = scrape(url)
        assert value(got, "flexjob_operator_replicas", job_name="seen", phase="Running") == 0
        assert value(got, "flexjob_operator_reconcile_seconds_count", platform="kubernetes") >= 1
        assert value(got, "flexjob_operator_queue_depth") >= 0
        assert dashboard_metrics("flexjob_operator_") <= set(got)
