"""Where implicit job masters keep their state on Kubernetes: by default a claim per job that
the operator creates, an admin's shared claim when the operator is given one, none when told
so; which pods mount it, and where PS replicas checkpoint."""

import pytest

from flexjob.api import DatasetSpec, ElasticJob, ReplicaType, names
from flexjob.api.errors import InvalidSpecError
from flexjob.core.operator.job_master import (
    KUBERNETES_STATE_ROOT,
    JobMasterConfig,
    kubernetes_job_master,
    ps_checkpoint_dir,
    with_job_master,
)
from flexjob.core.operator.master_state import (
    DEFAULT_SIZE,
    IMAGE_GROUP_ID,
    NO_STATE,
    PER_JOB_STATE,
    MasterStateStorage,
    StateVolume,
    claim_body,
    per_job_claim,
    state_volume,
)
from flexjob.core.training.master_config import MasterConfig
from tests.core.operator.reconcile_sim import make_job
from tests.support.k8s_fixtures import REPO

SHARED = MasterStateStorage(claim="masters")


def job(ps: int = 0) -> ElasticJob:
    made = make_job(master=False, workers=2, ps=ps)
    made.metadata.uid = "u-7"
    made.spec.dataset = DatasetSpec(size=100)
    if ps:
        container = made.spec.replica_specs[ReplicaType.PS].template.spec.containers[0]
        container.command, container.ports = [], []
    return made


@pytest.mark.parametrize(
    ("storage", "expected"),
    [
        (None, None),
        (NO_STATE, None),
        (MasterStateStorage(keep=False, claim="masters"), None),
        (PER_JOB_STATE, StateVolume(claim="demo-master-state", created=True)),
        (
            MasterStateStorage(storage_class="fast", size="5Gi"),
            StateVolume("demo-master-state", True),
        ),
        (SHARED, StateVolume(claim="masters", created=False)),
    ],
)
def test_which_claim_a_master_keeps_its_state_on(
    storage: MasterStateStorage | None, expected: StateVolume | None
) -> None:
    assert state_volume("demo", storage) == expected


def test_the_default_is_a_claim_per_job_of_the_default_class() -> None:
    assert MasterStateStorage() == PER_JOB_STATE
    assert (PER_JOB_STATE.keep, PER_JOB_STATE.claim, PER_JOB_STATE.storage_class) == (True, "", "")
    assert PER_JOB_STATE.size == DEFAULT_SIZE == "1Gi"
    assert per_job_claim("demo") == "demo-master-state"


@pytest.mark.parametrize(
    ("storage", "spec"),
    [
        (
            PER_JOB_STATE,
            {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        ),
        (
            MasterStateStorage(storage_class="fast-ssd", size="500Mi"),
            {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "500Mi"}},
                "storageClassName": "fast-ssd",
            },
        ),
    ],
)
def test_the_claim_the_operator_creates(
    storage: MasterStateStorage, spec: dict[str, object]
) -> None:
    assert claim_body("team-a", "demo", storage) == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "demo-master-state",
            "namespace": "team-a",
            "labels": {names.LABEL_JOB_NAME: "demo"},
        },
        "spec": spec,
    }


@pytest.mark.parametrize("size", ["0", "-1Gi", "lots", ""])
def test_a_size_that_is_no_positive_quantity_is_refused_by_name(size: str) -> None:
    with pytest.raises(InvalidSpecError, match=r"job master state size: .*such as 1Gi"):
        MasterStateStorage(size=size)


def master_pod(options: JobMasterConfig, made: ElasticJob | None = None) -> dict[str, object]:
    spec = with_job_master(made or job(), options).spec.replica_specs[ReplicaType.MASTER]
    return spec.template.to_wire()["spec"]


def master_config(options: JobMasterConfig) -> MasterConfig:
    spec = with_job_master(job(), options).spec.replica_specs[ReplicaType.MASTER]
    [env] = [e for e in spec.template.spec.containers[0].env if e.name == names.ENV_MASTER_CONFIG]
    return MasterConfig.from_json(str(env.value))


MOUNT = [{"name": "flexjob-master-state", "mountPath": KUBERNETES_STATE_ROOT}]
JOB_DIR = f"{KUBERNETES_STATE_ROOT}/ns/demo/master-u-7"


@pytest.mark.parametrize(
    ("storage", "claim", "fs_group", "job_dir"),
    [
        (PER_JOB_STATE, "demo-master-state", IMAGE_GROUP_ID, JOB_DIR),
        (SHARED, "masters", None, JOB_DIR),
        (NO_STATE, None, None, None),
    ],
)
def test_the_master_pod_mounts_its_claim_and_keeps_its_state_in_its_incarnations_folder(
    storage: MasterStateStorage, claim: str | None, fs_group: int | None, job_dir: str | None
) -> None:
    options = kubernetes_job_master("flexjob:1", storage)
    pod = master_pod(options)
    [main] = pod["containers"]  # type: ignore[misc]
    if claim is None:
        assert not pod.get("volumes") and not main.get("volumeMounts")
    else:
        volume = {"name": "flexjob-master-state", "persistentVolumeClaim": {"claimName": claim}}
        assert pod["volumes"] == [volume]
        assert main["volumeMounts"] == MOUNT
    assert (pod.get("securityContext") or {}).get("fsGroup") == fs_group  # type: ignore[attr-defined]
    assert master_config(options).job_dir == job_dir


def test_the_image_group_is_the_dockerfiles() -> None:
    """``fsGroup`` is the group the image's user writes as (``USER 10001:10001``)."""
    assert f"USER {IMAGE_GROUP_ID}:{IMAGE_GROUP_ID}" in (REPO / "Dockerfile").read_text()


def ps_pod(options: JobMasterConfig) -> dict[str, object]:
    spec = with_job_master(job(ps=2), options).spec.replica_specs[ReplicaType.PS]
    return spec.template.to_wire()["spec"]


@pytest.mark.parametrize(
    ("options", "checkpoints", "claim"),
    [
        # local: a folder of this machine every PS reaches
        (JobMasterConfig(state_root="/s"), "/s/ns/demo/ps-u-7", None),
        (JobMasterConfig(), "", None),
        # Kubernetes: the job's own claim is the master's alone (ReadWriteOnce)
        (kubernetes_job_master("fj:1"), "", None),
        (kubernetes_job_master("fj:1", NO_STATE), "", None),
        # an admin's shared claim: every PS mounts it and checkpoints there
        (
            kubernetes_job_master("fj:1", SHARED),
            f"{KUBERNETES_STATE_ROOT}/ns/demo/ps-u-7",
            "masters",
        ),
    ],
)
def test_where_ps_replicas_checkpoint_and_what_they_mount(
    options: JobMasterConfig, checkpoints: str, claim: str | None
) -> None:
    assert ps_checkpoint_dir(job(ps=2), options) == checkpoints
    pod = ps_pod(options)
    [main] = pod["containers"]  # type: ignore[misc]
    assert ("--checkpoint-dir" in main["args"]) == bool(checkpoints)
    if checkpoints:
        assert main["args"][-1] == checkpoints
    if claim is None:
        assert not pod.get("volumes") and not main.get("volumeMounts")
    else:
        volume = {"name": "flexjob-master-state", "persistentVolumeClaim": {"claimName": claim}}
        assert (pod["volumes"], main["volumeMounts"]) == ([volume], MOUNT)
        assert "securityContext" not in pod
