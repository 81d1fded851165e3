"""On Kubernetes every pod of a job serves /metrics where Prometheus reaches it: on the pod's
address at the named port ``metrics``, annotated for scraping, with the token of its
namespace's ``flexjob-job-metrics`` Secret (the operator creates it, owned by no job), which
the PodMonitor of `flexjob manifests install` sends."""

from datetime import UTC, datetime

from kubernetes.client import CoreV1Api

from flexjob.api import ElasticPolicy
from flexjob.api.names import ENV_METRICS_ADDR, ENV_METRICS_TOKEN, METRICS_PORT
from flexjob.core.operator.job_master import kubernetes_job_master
from flexjob.operator.manifests import InstallConfig, install_manifests
from flexjob.operator.reconcile_pass import reconcile_job
from flexjob.platform.kubernetes import KubernetesPlatform
from tests.support.local_jobs import local_job

OPTIONS = kubernetes_job_master("flexjob:1")
SECRET = "flexjob-job-metrics"


def _run_job(platform: KubernetesPlatform, name: str) -> None:
    job = local_job(name, None, "pass", workers=2)
    job.spec.elastic_policy = ElasticPolicy(rdzv_backend="flexjob")
    platform.create_job(job)
    for _ in range(4):
        reconcile_job(platform, "default", name, datetime.now(UTC), job_master=OPTIONS)


def test_every_job_pod_serves_metrics_on_its_address_with_the_namespace_token(
    platform_and_core: tuple[KubernetesPlatform, CoreV1Api],
) -> None:
    platform, core = platform_and_core
    _run_job(platform, "scraped")
    pods = core.list_namespaced_pod("default").items
    names = ["scraped-master-0", "scraped-worker-0", "scraped-worker-1"]
    assert sorted(p.metadata.name for p in pods) == names
    for pod in pods:
        assert pod.metadata.annotations["prometheus.io/scrape"] == "true"
        assert pod.metadata.annotations["prometheus.io/port"] == str(METRICS_PORT)
        assert pod.metadata.annotations["prometheus.io/path"] == "/metrics"
        assert pod.metadata.labels["flexjob.dev/metrics"] == "true"
        (container,) = pod.spec.containers
        ports = {p.name: p.container_port for p in container.ports}
        assert ports["metrics"] == METRICS_PORT
        env = {e.name: e for e in container.env}
        assert env[ENV_METRICS_ADDR].value == f"0.0.0.0:{METRICS_PORT}"
        ref = env[ENV_METRICS_TOKEN].value_from.secret_key_ref
        assert (ref.name, ref.key) == (SECRET, "token")


def test_the_namespace_metrics_secret_outlives_each_job(
    platform_and_core: tuple[KubernetesPlatform, CoreV1Api],
) -> None:
    platform, core = platform_and_core
    _run_job(platform, "first")
    secret = core.read_namespaced_secret(SECRET, "default")
    token = (secret.string_data or secret.data)["token"]
    assert len(token) >= 32
    assert not secret.metadata.owner_references
    _run_job(platform, "second")  # a second job reads the same token
    again = core.read_namespaced_secret(SECRET, "default")
    assert (again.string_data or again.data)["token"] == token


def test_the_metrics_port_gets_no_service_of_its_own(
    platform_and_core: tuple[KubernetesPlatform, CoreV1Api],
) -> None:
    platform, core = platform_and_core
    _run_job(platform, "svc")
    ports = {
        s.metadata.name: [p.port for p in s.spec.ports]
        for s in core.list_namespaced_service("default").items
    }
    assert METRICS_PORT not in [port for each in ports.values() for port in each], ports
    assert "svc-worker-1" not in ports


def test_install_adds_a_pod_monitor_of_the_jobs_in_each_job_namespace() -> None:
    options = InstallConfig(metrics_token_secret="scrape", job_namespaces=("default", "team"))
    monitors = [m for m in install_manifests(options) if m["kind"] == "PodMonitor"]
    assert sorted(m["metadata"]["namespace"] for m in monitors) == ["default", "team"]
    for monitor in monitors:
        assert monitor["spec"]["selector"]["matchLabels"] == {"flexjob.dev/metrics": "true"}
        (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
        assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"
        assert endpoint["bearerTokenSecret"] == {"name": SECRET, "key": "token"}


def test_install_without_a_metrics_secret_adds_no_pod_monitor() -> None:
    assert not [m for m in install_manifests(InstallConfig()) if m["kind"] == "PodMonitor"]
