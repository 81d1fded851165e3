"""On Kubernetes the operator gives each job with an implicit master its own token: a Secret
owned by the job, created once before the master, read by the master's pod through
``secretKeyRef`` and never written into a pod's command line."""

from datetime import UTC, datetime

from kubernetes.client import CoreV1Api, NetworkingV1Api

from flexjob.api import ElasticJob, ElasticPolicy
from flexjob.core.operator.job_master import kubernetes_job_master
from flexjob.operator.reconcile_pass import reconcile_job
from flexjob.platform.kubernetes import KubernetesPlatform
from tests.support.local_jobs import local_job

OPTIONS = kubernetes_job_master("flexjob:1")


def _settle(platform: KubernetesPlatform) -> None:
    for _ in range(4):
        reconcile_job(platform, "default", "tok", datetime.now(UTC), job_master=OPTIONS)


def _settled_job(platform: KubernetesPlatform) -> ElasticJob:
    """The job ``tok`` (an implicit master, two workers), created and reconciled a few times."""
    job = local_job("tok", None, "pass", workers=2)
    job.spec.elastic_policy = ElasticPolicy(rdzv_backend="flexjob")
    created = platform.create_job(job)
    _settle(platform)
    return created


def test_the_job_secret_holds_the_token_the_master_pod_reads(
    platform_and_core: tuple[KubernetesPlatform, CoreV1Api],
) -> None:
    platform, core = platform_and_core
    created = _settled_job(platform)

    secret = core.read_namespaced_secret("tok-master-token", "default")
    token = secret.string_data["token"] if secret.string_data else secret.data["token"]
    assert len(token) >= 32
    (owner,) = secret.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid) == ("ElasticJob", "tok", created.metadata.uid)

    pods = core.list_namespaced_pod("default").items
    assert sorted(p.metadata.name for p in pods) == ["tok-master-0", "tok-worker-0", "tok-worker-1"]
    for pod in pods:
        (container,) = pod.spec.containers
        assert token not in " ".join([*(container.command or []), *(container.args or [])])
        if pod.metadata.name != "tok-master-0":  # workers: their own credential, no token
            assert not [e for e in container.env if e.name == "FLEXJOB_MASTER_TOKEN"]
            continue
        (env,) = [e for e in container.env if e.name == "FLEXJOB_MASTER_TOKEN"]
        assert env.value is None
        ref = env.value_from.secret_key_ref
        assert (ref.name, ref.key) == ("tok-master-token", "token")

    _settle(platform)  # later passes keep the first token: running pods hold it
    again = core.read_namespaced_secret("tok-master-token", "default")
    assert (again.string_data or again.data)["token"] == token


def test_the_job_network_policy_is_created_owned_by_the_job_before_its_master(
    platform_and_core: tuple[KubernetesPlatform, CoreV1Api],
) -> None:
    platform, core = platform_and_core
    created = _settled_job(platform)
    api = NetworkingV1Api(core.api_client)
    policy = api.read_namespaced_network_policy("tok-master", "default")
    (owner,) = policy.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid) == ("ElasticJob", "tok", created.metadata.uid)
    selector = policy.spec.pod_selector
    assert selector.match_labels == {"flexjob.dev/job-name": "tok"}
    (peers, _metrics) = policy.spec.ingress
    assert peers._from[0].pod_selector.match_labels == {"flexjob.dev/job-name": "tok"}
