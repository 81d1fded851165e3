"""The process kubelet's volume provisioner: a PersistentVolumeClaim is bound at once to a
volume of its own, a directory ``<volume_dir>/pvc-<claim uid>`` of this machine, as a dynamic
provisioner binds a claim of the cluster's default StorageClass (the volume outlives the pods
that mount it; it goes with its claim's uid). A pod whose claim is missing or unbound is not
scheduled (``PodScheduled: False``), as the scheduler keeps it Pending. Pure functions over
claim and pod bodies; the kubelet does the I/O.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.k8s_pod_env import volume_claims

Body = dict[str, Any]
#: The capacity a claim that requests none is bound with.
DEFAULT_CAPACITY = "1Gi"


def bound_status(claim: Body) -> Body | None:
    """The status that binds ``claim``; None when it is bound already."""
    if (claim.get("status") or {}).get("phase") == "Bound":
        return None
    spec = claim.get("spec") or {}
    requested = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    return {
        "phase": "Bound",
        "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
        "capacity": {"storage": requested or DEFAULT_CAPACITY},
    }


def volume_directory(volume_dir: Path, claim: Body) -> Path:
    """The directory of the volume bound (or to be bound) to ``claim``."""
    return volume_dir / f"pvc-{claim['metadata']['uid']}"


def bound_directory(volume_dir: Path, claim: Body | None) -> str | None:
    """The directory of ``claim``'s volume; None while it is missing or unbound."""
    if claim is None or (claim.get("status") or {}).get("phase") != "Bound":
        return None
    return str(volume_directory(volume_dir, claim))


def unbound_condition(pod: Body, directory: Callable[[str], str | None]) -> Body | None:
    """The ``PodScheduled`` condition of a pod one of whose claims (``directory``: its bound
    volume's directory, by claim name) is missing or unbound; None when all are bound."""
    unbound = [c for c in volume_claims(pod) if directory(c) is None]
    if not unbound:
        return None
    return {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": f"persistentvolumeclaim {unbound[0]!r} not found or unbound",
    }
