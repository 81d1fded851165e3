"""A lean watch of the pods labelled ``flexjob.dev/job-name``, feeding the pod handler.

kopf spends about 0.6 ms of its own per event before a handler runs (its diff base, causes,
progress storage, per-event loggers and kwargs) and a job's pods bring two events each (created,
Running): most of the operator's time besides creating the pods. The pods need none of that —
their handler only updates the watch cache and queues the job — so the operator lists and
watches them itself, as a Kubernetes informer does: a list, then a watch from the list's
resourceVersion, resumed from the last version it saw when the server ends the stream (every
``timeout`` seconds) or the connection breaks (after a backoff), listed afresh when the version
is too old (410 Gone). A pod that went while no watch ran is dropped from the cache by the
job's next re-list (``watch_cache``). Credentials are read again for every connection (rotated
service-account tokens). Namespaces: every one, or each named one (a name with ``*`` or ``?``
is matched against a cluster-wide watch).
"""

import asyncio
import fnmatch
import json
import logging
import ssl
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import aiohttp
import kopf

from flexjob.api.errors import OperatorError
from flexjob.api.names import LABEL_JOB_NAME

logger = logging.getLogger(__name__)

#: Events handled between two turns of the event loop's other work: lines a burst brought in
#: at once are read without the loop running anything else (kopf, the passes' completions).
YIELD_EVERY = 16

#: Called with each event's type (None: listed) and the pod's body.
PodHandler = Callable[[str | None, Mapping[str, Any]], None]
BACKOFF = (0.1, 0.5, 1.0, 2.0, 5.0)


class Gone(OperatorError):
    """The version to watch from is too old (410): list afresh."""


def _ssl(info: kopf.ConnectionInfo) -> ssl.SSLContext | bool:
    if info.insecure:
        return False
    context = ssl.create_default_context(cafile=info.ca_path, cadata=info.ca_data)
    if info.certificate_path is not None:
        context.load_cert_chain(info.certificate_path, info.private_key_path)
    return context


def _headers(info: kopf.ConnectionInfo) -> dict[str, str]:
    if info.token:
        return {"Authorization": f"{info.scheme or 'Bearer'} {info.token}"}
    return {}


def api_session(info: kopf.ConnectionInfo, limit: int = 100) -> aiohttp.ClientSession:
    """An aiohttp session to the API server ``info`` names (paths relative to its URL), its
    credentials and TLS settings, at most ``limit`` connections."""
    return aiohttp.ClientSession(
        base_url=info.server.rstrip("/") + "/",
        headers=_headers(info),
        connector=aiohttp.TCPConnector(ssl=_ssl(info), limit=limit),
    )


async def _lines(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The stream's lines, whatever their length (a pod may exceed aiohttp's line limit)."""
    pending = b""
    async for chunk in response.content.iter_any():
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


class PodWatch:
    """``run()`` lists and watches the pods of ``namespaces`` (all when empty) until cancelled,
    calling ``handle`` on the event loop for each; ``listed`` is set once every first list
    went through."""

    def __init__(
        self,
        connection: Callable[[], kopf.ConnectionInfo],
        handle: PodHandler,
        namespaces: Sequence[str] = (),
        timeout: float | None = None,
    ) -> None:
        self._connection = connection
        self._handle = handle
        self._timeout = max(1, round(timeout)) if timeout else 300
        exact = [n for n in namespaces if not any(c in n for c in "*?[")]
        self._patterns = [n for n in namespaces if n not in exact]
        scopes: list[str | None] = list(exact)
        if self._patterns or not namespaces:
            scopes.append(None)  # cluster-wide (filtered by the patterns, if any)
        self._scopes = scopes
        self.listed = asyncio.Event()

    async def run(self) -> None:
        first_lists = [asyncio.Event() for _ in self._scopes]

        async def all_listed() -> None:
            for event in first_lists:
                await event.wait()
            self.listed.set()

        async with asyncio.TaskGroup() as group:
            group.create_task(all_listed())
            for scope, listed in zip(self._scopes, first_lists, strict=True):
                group.create_task(self._scope(scope, listed))

    def _wanted(self, namespace: str | None, body: Mapping[str, Any]) -> bool:
        """Whether a pod a ``namespace`` scope's list or watch brought is served (the
        cluster-wide one's: only those of the patterns, when there are any)."""
        if namespace is not None or not self._patterns:
            return True
        of = (body.get("metadata") or {}).get("namespace") or ""
        return any(fnmatch.fnmatchcase(of, p) for p in self._patterns)

    async def _scope(self, namespace: str | None, listed: asyncio.Event) -> None:
        path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
        version: str | None = None
        failures = 0
        while True:
            info = self._connection()
            try:
                async with api_session(info) as session:
                    if version is None:
                        version = await self._list(session, namespace, path.lstrip("/"))
                        listed.set()
                    version = await self._watch(session, namespace, path.lstrip("/"), version)
                failures = 0
            except Gone:
                version = None
            except Exception as exc:  # the API is away or answered nonsense: try again
                delay = BACKOFF[min(failures, len(BACKOFF) - 1)]
                failures += 1
                logger.warning("pod watch %s failed (%s); again in %.1f s", path, exc, delay)
                await asyncio.sleep(delay)

    async def _list(self, session: aiohttp.ClientSession, namespace: str | None, path: str) -> str:
        params = {"labelSelector": LABEL_JOB_NAME}
        async with session.get(path, params=params) as response:
            response.raise_for_status()
            listing = await response.json()
        for body in listing.get("items") or []:
            body.setdefault("apiVersion", "v1")
            body.setdefault("kind", "Pod")
            if self._wanted(namespace, body):
                self._handle(None, body)
        return str(listing["metadata"]["resourceVersion"])

    async def _watch(
        self, session: aiohttp.ClientSession, namespace: str | None, path: str, version: str
    ) -> str:
        """Follow the stream until the server ends it; the last version seen."""
        params = {
            "labelSelector": LABEL_JOB_NAME,
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": version,
            "timeoutSeconds": str(self._timeout),
        }
        limit = aiohttp.ClientTimeout(total=None, sock_read=self._timeout + 30)
        handled = 0
        async with session.get(path, params=params, timeout=limit) as response:
            if response.status == 410:
                raise Gone()
            response.raise_for_status()
            async for line in _lines(response):
                handled += 1
                if handled % YIELD_EVERY == 0:  # a burst read at once: let the loop run
                    await asyncio.sleep(0)
                event = json.loads(line)
                kind, body = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    if body.get("code") == 410:
                        raise Gone()
                    raise ValueError(f"watch error: {body.get('message')}")
                version = (body.get("metadata") or {}).get("resourceVersion") or version
                if kind != "BOOKMARK" and self._wanted(namespace, body):
                    try:
                        self._handle(kind, body)
                    except Exception:  # one pod the handler cannot take stops no watch
                        logger.exception("pod event %s of %s", kind, body.get("metadata"))
        return version
