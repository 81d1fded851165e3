"""On Kubernetes the operator gives each job's implicit master a PersistentVolumeClaim of its
own by default: created once, before the master, owned by the job (deleted with it), mounted
by the master pod only. With an admin's shared claim it creates none; told to keep no state,
none either."""

from datetime import UTC, datetime

import pytest
from kubernetes.client import CoreV1Api
from kubernetes.client.exceptions import ApiException

from flexjob.api import ElasticJob, ElasticPolicy
from flexjob.core.operator.job_master import JobMasterConfig, kubernetes_job_master
from flexjob.core.operator.master_state import (
    NO_STATE,
    PER_JOB_STATE,
    MasterStateStorage,
)
from flexjob.operator.reconcile_pass import reconcile_job
from flexjob.platform.kubernetes import KubernetesPlatform
from tests.support.local_jobs import local_job
from tests.support.polling import wait_until

JOB = "keep"


def _settle(platform: KubernetesPlatform, options: JobMasterConfig, passes: int = 4) -> None:
    for _ in range(passes):
        reconcile_job(platform, "default", JOB, datetime.now(UTC), job_master=options)


def _job(platform: KubernetesPlatform) -> ElasticJob:
    job = local_job(JOB, None, "pass", workers=1)
    job.spec.elastic_policy = ElasticPolicy(rdzv_backend="flexjob")
    return platform.create_job(job)


def _claims(core: CoreV1Api) -> list[str]:
    return sorted(
        c.metadata.name for c in core.list_namespaced_persistent_volume_claim("default").items
    )


def _master_claims(core: CoreV1Api) -> list[str]:
    pod = core.read_namespaced_pod(f"{JOB}-master-0", "default")
    return [
        v.persistent_volume_claim.claim_name
        for v in pod.spec.volumes or []
        if v.persistent_volume_claim
    ]


def test_each_master_gets_a_claim_of_its_own_owned_by_its_job(
    platform_and_core: tuple[KubernetesPlatform, CoreV1Api],
) -> None:
    platform, core = platform_and_core
    created = _job(platform)
    options = kubernetes_job_master("flexjob:1")
    assert options.state_storage == PER_JOB_STATE
    reconcile_job(platform, "default", JOB, datetime.now(UTC), job_master=options)
    assert _claims(core) == [f"{JOB}-master-state"]  # before the master's pod
    _settle(platform, options)
    claim = core.read_namespaced_persistent_volume_claim(f"{JOB}-master-state", "default")
    (owner,) = claim.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid) == ("ElasticJob", JOB, created.metadata.uid)
    assert claim.spec.access_modes == ["ReadWriteOnce"]
    assert claim.spec.resources.requests == {"storage": "1Gi"}
    assert claim.spec.storage_class_name is None  # the cluster's default class
    assert _master_claims(core) == [f"{JOB}-master-state"]
    assert core.read_namespaced_pod(f"{JOB}-worker-0", "default").spec.volumes in (None, [])
    uid = claim.metadata.uid
    _settle(platform, options)  # later passes keep it: it holds the master's state
    assert (
        core.read_namespaced_persistent_volume_claim(f"{JOB}-master-state", "default").metadata.uid
        == uid
    )
    platform.delete_job("default", JOB)

    def gone() -> bool:
        try:
            core.read_namespaced_persistent_volume_claim(f"{JOB}-master-state", "default")
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_until(gone, 10, what="the claim deleted with its job")


@pytest.mark.parametrize(
    ("storage", "claims", "mounted"),
    [
        (MasterStateStorage(claim="masters"), [], ["masters"]),
        (NO_STATE, [], []),
    ],
)
def test_a_shared_claim_or_no_state_creates_no_claim(
    platform_and_core: tuple[KubernetesPlatform, CoreV1Api],
    storage: MasterStateStorage,
    claims: list[str],
    mounted: list[str],
) -> None:
    platform, core = platform_and_core
    _job(platform)
    _settle(platform, kubernetes_job_master("flexjob:1", storage))
    assert _claims(core) == claims
    assert _master_claims(core) == mounted
