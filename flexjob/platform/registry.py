"""Choosing a platform by name: ``local`` (default) or ``kubernetes``.

The CLI's ``--platform`` option and the ``FLEXJOB_PLATFORM`` environment variable end here.
Implementations are imported on demand so that the local platform never loads the Kubernetes
client. ``flexjob.platform.kubernetes`` must expose ``KubernetesPlatform()`` (no arguments).
"""

import importlib
import os
from typing import cast

from flexjob.api.names import ENV_PLATFORM
from flexjob.platform.contract import Platform

PLATFORMS = ("local", "kubernetes")


def open_platform(kind: str | None = None) -> Platform:
    """The platform named ``kind`` (else ``$FLEXJOB_PLATFORM``, else local)."""
    kind = kind or os.environ.get(ENV_PLATFORM) or "local"
    if kind == "local":
        from flexjob.platform.local import LocalPlatform

        return LocalPlatform()
    if kind == "kubernetes":
        module = importlib.import_module("flexjob.platform.kubernetes")
        return cast(Platform, module.KubernetesPlatform())
    raise ValueError(f"platform {kind!r} is not one of {', '.join(PLATFORMS)}")
