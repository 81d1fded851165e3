"""A master with ``scale_plan_platform="kubernetes"`` writes its ScalePlans as custom objects
(through a kubeconfig for the emulator), owned by its job: the calls ``JOB_MASTER_RULES``
grant the implicit master's service account."""

from pathlib import Path

import pytest

from flexjob.api import ElasticJob
from flexjob.platform.kubernetes import KubernetesPlatform
from tests.master.test_optimizer_loop import tick_after_an_oom
from tests.support.k8s_fixtures import SCALEPLANS, EmulatorThread, use_kubeconfig


def test_master_creates_a_scale_plan_object_owned_by_its_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EmulatorThread() as emulator:
        use_kubeconfig(tmp_path / "kubeconfig", emulator.base_url, monkeypatch)
        job = ElasticJob.model_validate({"metadata": {"name": "j", "namespace": "ns"}})
        job = KubernetesPlatform().create_job(job)
        tick_after_an_oom("kubernetes")
        [plan] = emulator.store.select(SCALEPLANS, "ns")
    assert plan["spec"]["ownerJob"] == "j"
    assert [o["uid"] for o in plan["metadata"]["ownerReferences"]] == [job.metadata.uid]
