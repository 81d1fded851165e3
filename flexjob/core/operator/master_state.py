"""Where an implicit job master keeps its state on Kubernetes, so that a relaunched master
continues where it was (shards done, rendezvous, the timeline).

By default every job whose master the operator runs gets a PersistentVolumeClaim of its own,
``<job>-master-state`` (``ReadWriteOnce``, ``DEFAULT_SIZE``, the cluster's default
StorageClass unless one is named), which the operator creates before the job's master, owned
by the job (deleted with it), and which only the master pod mounts, at
``job_master.KUBERNETES_STATE_ROOT``; the master pod also gets ``fsGroup`` of the image's group
(``IMAGE_GROUP_ID``) so that the non-root master can write a freshly provisioned volume. This
is what a StatefulSet's ``volumeClaimTemplates`` give one pod, and what DLRover's relaunched
master relies on: its progress is not lost with its pod.

``MasterStateStorage`` is the operator's setting (``flexjob operator``'s
``--job-master-state-*`` options): ``claim`` names one claim the cluster's admin made for every
job master of a namespace instead (``ReadWriteMany`` when masters may run on different nodes;
it is then shared by the job's command-less PS replicas too, for their checkpoints), and
``keep=False`` keeps no state (a relaunched master starts from nothing). ``state_volume``
decides, per job, which claim its master mounts and whether the operator creates it;
``claim_body`` is the claim the operator creates. Pure: no I/O.
"""

from dataclasses import dataclass
from typing import Any

from flexjob.api.errors import InvalidSpecError
from flexjob.api.names import LABEL_JOB_NAME
from flexjob.api.quantity import parse_quantity

#: The size of a per-job state claim: a master's snapshot and journal are small (shard ranges,
#: not data), and 1Gi is the smallest volume many provisioners make.
DEFAULT_SIZE = "1Gi"
#: The group of the image's user (``Dockerfile``: ``USER 10001:10001``); the master pod's
#: ``fsGroup``, so the kubelet gives that group write access to a provisioned volume.
IMAGE_GROUP_ID = 10001
#: The access mode of a per-job claim: only the master pod mounts it, and every provisioner
#: makes ReadWriteOnce volumes (many make no ReadWriteMany ones).
PER_JOB_ACCESS_MODE = "ReadWriteOnce"


@dataclass(frozen=True, slots=True)
class MasterStateStorage:
    """How the operator keeps implicit job masters' state on Kubernetes (see module doc).

    ``keep``: keep it at all; ``claim``: one existing claim (in each job's namespace) for
    every master, "" = one claim per job, created by the operator; ``storage_class``: the
    StorageClass of per-job claims, "" = the cluster's default; ``size``: their size (a
    Kubernetes quantity)."""

    keep: bool = True
    claim: str = ""
    storage_class: str = ""
    size: str = DEFAULT_SIZE

    def __post_init__(self) -> None:
        try:
            if parse_quantity(self.size) <= 0:
                raise ValueError(f"{self.size!r} is not above zero")
        except ValueError as exc:
            raise InvalidSpecError(
                f"job master state size: {exc}; give a Kubernetes quantity such as 1Gi or 500Mi"
            ) from exc


#: The default: a claim per job, in the cluster's default StorageClass.
PER_JOB_STATE = MasterStateStorage()
#: The operator keeps no state of its job masters (``--no-job-master-state``).
NO_STATE = MasterStateStorage(keep=False)


@dataclass(frozen=True, slots=True)
class StateVolume:
    """The claim a job's master mounts: ``claim``; ``created``: the operator creates it for
    this job (owned by the job) rather than finding one the admin made; ``shared``: the
    claim serves every master of the namespace (and the job's PS replicas)."""

    claim: str
    created: bool

    @property
    def shared(self) -> bool:
        return not self.created


def per_job_claim(job: str) -> str:
    """The name of ``job``'s own state claim."""
    return f"{job}-master-state"


def state_volume(job: str, storage: MasterStateStorage | None) -> StateVolume | None:
    """The claim ``job``'s master keeps its state on; None when it keeps none (no storage
    given: the local platform, whose masters keep theirs in a folder; or ``keep=False``)."""
    if storage is None or not storage.keep:
        return None
    if storage.claim:
        return StateVolume(claim=storage.claim, created=False)
    return StateVolume(claim=per_job_claim(job), created=True)


def claim_body(namespace: str, job: str, storage: MasterStateStorage) -> dict[str, Any]:
    """The PersistentVolumeClaim the operator creates for ``job``'s master (the caller adds
    the job as its owner)."""
    spec: dict[str, Any] = {
        "accessModes": [PER_JOB_ACCESS_MODE],
        "resources": {"requests": {"storage": storage.size}},
    }
    if storage.storage_class:
        spec["storageClassName"] = storage.storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": per_job_claim(job),
            "namespace": namespace,
            "labels": {LABEL_JOB_NAME: job},
        },
        "spec": spec,
    }
