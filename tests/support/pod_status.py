"""The status a test writes for a pod, playing the kubelet: its phase and, once its container
ended, that container's exit code (as a JSON merge patch of the pod's status)."""

from typing import Any

#: The content type of the patch ``pod_status`` is sent as.
MERGE_PATCH = "application/merge-patch+json"


def pod_status(phase: str, exit_code: int | None = None) -> dict[str, Any]:
    """A pod status of ``phase``; with ``exit_code``, its container ``main`` terminated with it."""
    status: dict[str, Any] = {"phase": phase}
    if exit_code is not None:
        container = {"name": "main", "image": "python:3.11", "imageID": "", "ready": False}
        state = {"terminated": {"exitCode": exit_code}}
        status["containerStatuses"] = [{**container, "restartCount": 0, "state": state}]
    return status
