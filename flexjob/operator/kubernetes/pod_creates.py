"""Pod creates sent from one event loop of their own over aiohttp, not one thread each.

The dispatcher (``create_dispatch``) had a thread per create in flight (64), each sending
through the Kubernetes client (its argument validation, its serializer, urllib3): ~1.1 ms of
CPU per create in the operator process, and 64 threads contending for the interpreter lock
with the passes, kopf and the pod watch. ``PodCreates`` sends them from one thread running an
``asyncio`` loop and an aiohttp session (``pod_watch.api_session``: the same credentials and
TLS settings, read again whenever the session is made anew): ~0.5 ms per create, one thread.
The pod is the one ``KubernetesPlatform.create_replica`` sends (``bodies.pod_body`` with the
job's controller reference the platform remembers); its answer becomes the same ``Replica``, and
errors the same platform errors: 409 ``AlreadyExistsError``, 404 ``NotFoundError``, anything
else ``UnavailableError`` (a 401 also makes the next create use a new session: a rotated
token). At most ``limit`` creates are in flight, each for the platform's request timeout.
"""

import asyncio
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future

import aiohttp
import kopf

from flexjob.operator.kubernetes.pod_watch import api_session
from flexjob.platform.contract import (
    AlreadyExistsError,
    NotFoundError,
    Replica,
    ReplicaRequest,
    UnavailableError,
)
from flexjob.platform.kubernetes import KubernetesPlatform, bodies

logger = logging.getLogger(__name__)


class PodCreates:
    """``create(request)`` returns at once a future of the created ``Replica``."""

    def __init__(
        self,
        platform: KubernetesPlatform,
        connection: Callable[[], kopf.ConnectionInfo],
        limit: int,
    ) -> None:
        self._platform = platform
        self._connection = connection
        self._limit = max(1, limit)
        self._session: aiohttp.ClientSession | None = None
        self._loop = asyncio.new_event_loop()
        self._slots = asyncio.Semaphore(self._limit)
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="flexjob-pod-creates", daemon=True
        )
        self._thread.start()

    def create(self, request: ReplicaRequest) -> "Future[Replica]":
        """Send the create of ``request``'s pod (from any thread); RuntimeError once closed."""
        if self._loop.is_closed():
            raise RuntimeError("the pod creates' loop is closed")
        return asyncio.run_coroutine_threadsafe(self._create(request), self._loop)

    async def _create(self, request: ReplicaRequest) -> Replica:
        async with self._slots:
            key = (request.namespace, request.job)
            owner = self._platform.known_owner(*key)
            if owner is None:  # read once per job (the platform remembers it), off this loop
                owner = await asyncio.to_thread(self._platform.owner, *key)
            body = bodies.pod_body(request, owner)
            what = f"pod {request.namespace}/{request.name}"
            if self._session is None:
                self._session = api_session(self._connection(), self._limit)
            path = f"api/v1/namespaces/{request.namespace}/pods"
            try:
                async with self._session.post(
                    path,
                    data=json.dumps(body),
                    headers={"Content-Type": "application/json"},
                    timeout=aiohttp.ClientTimeout(total=self._platform.request_timeout),
                ) as response:
                    data = await response.read()
                    status, reason = response.status, response.reason
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise UnavailableError(f"{what}: {exc!r}") from exc
            if status == 401 and self._session is not None:
                await self._session.close()
                self._session = None  # the next create reads the credentials again
            if status == 404:
                raise NotFoundError(f"{what} not found")
            if status == 409:
                raise AlreadyExistsError(f"{what} already exists or changed meanwhile")
            if status >= 400:
                raise UnavailableError(f"{what}: HTTP {status} {reason}: {data!r}")
            return bodies.replica_from_pod(json.loads(data))

    def close(self, timeout: float = 5.0) -> None:
        """Cancel what is in flight (each future ends cancelled), close the session, stop."""
        if not self._thread.is_alive():
            return

        async def stop() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self._session is not None:
                await self._session.close()

        try:
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout)
        except Exception:  # the loop is gone or stuck: stop it anyway
            logger.debug("closing the pod creates' loop failed", exc_info=True)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()
