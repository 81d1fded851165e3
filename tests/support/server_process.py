"""``flexjob server`` as a real process over the local platform, bound to 127.0.0.1."""

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from flexjob.platform.ports import free_port
from tests.support.polling import wait_until


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def flexjob_server(
    home: Path, token: str | None = None, kubeconfig: Path | None = None, port: int = 0
) -> Iterator[str]:
    """Run ``flexjob server --platform local`` on a free loopback port (or ``port``) with
    ``FLEXJOB_HOME`` at ``home`` (and ``token`` when given); with ``kubeconfig``, on the
    Kubernetes platform of that cluster instead. Yields its URL, stops it on exit."""
    port = port or free_port()
    env = {**os.environ, "FLEXJOB_HOME": str(home)}
    env.pop("FLEXJOB_SERVER_TOKEN", None)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    if token is not None:
        env["FLEXJOB_SERVER_TOKEN"] = token
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    command = [sys.executable, "-m", "flexjob", "server", "--port", str(port)]
    platform = "local" if kubeconfig is None else "kubernetes"
    command += ["--platform", platform, "--log-level", "warning"]
    proc = subprocess.Popen(command, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _healthy(url), timeout=30, what="flexjob server /healthz")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
