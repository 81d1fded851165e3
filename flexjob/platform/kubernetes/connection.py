"""Where the Kubernetes API is and how to authenticate: one ``Configuration`` for everyone.

In a pod the service account is used; elsewhere the kubeconfig (``--kubeconfig``/``--context``
or ``$KUBECONFIG``). Both the platform's client and kopf's login read the same configuration.
"""

import os
from typing import Any

import kubernetes.client
import kubernetes.config

from flexjob.api.errors import UnavailableError

_config: Any = kubernetes.config  # the client's config module carries no type hints

#: HTTP connections kept per client: the operator's workers (4) x actions in flight (16), plus
#: a first pass's reads, with room.
POOL_SIZE = 80


def load_configuration(
    kubeconfig: str | None = None, context: str | None = None, server: str | None = None
) -> kubernetes.client.Configuration:
    """``server`` alone: that URL without credentials (a local emulator or ``kubectl proxy``).
    ``UnavailableError`` naming the file and what to do when there is no usable kubeconfig
    (never the client's traceback)."""
    configuration = kubernetes.client.Configuration()
    configuration.connection_pool_maxsize = POOL_SIZE
    if server is not None:
        configuration.host = server.rstrip("/")
        return configuration
    if kubeconfig is None and context is None:
        try:
            _config.load_incluster_config(client_configuration=configuration)
            return configuration
        except _config.ConfigException:
            pass
    # $KUBECONFIG is read now, not when the client was imported (it may list several files).
    config_file = kubeconfig or os.environ.get("KUBECONFIG") or None
    try:
        _config.load_kube_config(
            config_file=config_file, context=context, client_configuration=configuration
        )
    except (_config.ConfigException, OSError, TypeError, ValueError) as exc:
        where = config_file or "~/.kube/config"
        raise UnavailableError(
            f"kubernetes: no usable kubeconfig ({where}: {exc}); not in a pod either. Point "
            "$KUBECONFIG (or the config file's kubeconfig key) at a cluster's kubeconfig, or "
            "use --platform local"
        ) from None
    return configuration
