"""What the roles of the CartPole job say to each other and to the flexjob server.

Every role serves JSON over HTTP on the port DI's environment gives it (``COLLECTOR_PORT``,
``LEARNER_PORT``, ``AGGREGATOR_PORT``, ``COORDINATOR_PORT``); ``serve`` runs such a server and
``call`` posts to one. ``DiServer`` is DI-engine's ``OperatorServer`` protocol (the JSON body
without a content type, ``namespace`` + ``coordinator`` or ``aggregator`` naming the caller,
the ``{success, code, message, data}`` envelope back), spoken with the standard library only.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlencode, urlsplit

Json = dict[str, Any]
Handler = Callable[[Json], Json]


def serve(port: int, routes: dict[str, Handler]) -> ThreadingHTTPServer:
    """Serve ``routes`` (path → handler of the posted JSON) on 127.0.0.1:``port`` in a thread."""

    class _Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            route = routes.get(self.path)
            if route is None:
                self.send_error(404)
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"] or 0)) or b"{}")
            out = json.dumps(route(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((os.environ.get("DI_BIND", "127.0.0.1"), port), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def call(address: str, path: str, body: Json, timeout: float = 60) -> Json:
    """POST ``body`` to ``http://address/path``; raises ``OSError`` when the role is gone."""
    request = urllib.request.Request(
        f"http://{address}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        data: Json = json.loads(response.read())
    return data


def wait_serving(address: str, path: str = "/ping", timeout: float = 120) -> None:
    """Until the role at ``address`` answers (a new replica still starts its interpreter)."""
    end = time.monotonic() + timeout
    while True:
        try:
            call(address, path, {}, timeout=5)
            return
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


def port(variable: str) -> int:
    return int(os.environ[variable])


def run_role(
    port_variable: str, routes: dict[str, Handler], on_stop: Callable[[], None] = lambda: None
) -> None:
    """Serve ``routes`` (and ``/ping``) on the role's port until SIGTERM, then exit 0."""
    serve(port(port_variable), {**routes, "/ping": lambda _: {}})
    name = os.environ.get("KUBERNETES_POD_NAME", port_variable)
    print(f"{name}: serving on {port(port_variable)}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    on_stop()
    os._exit(0)  # the serving threads end with the process


class DiServer:
    """The flexjob server as DI-engine's ``OperatorServer`` talks to it, from the environment
    the operator gives every DI role (``KUBERNETES_SERVER_URL`` and friends)."""

    def __init__(self, worker_type: str = "coordinator") -> None:
        server = urlsplit(os.environ["KUBERNETES_SERVER_URL"])  # DI keeps host and port only
        self.url = f"{server.scheme}://{server.netloc}"
        self.version = os.environ.get("KUBERNETES_SERVER_API_VERSION", "v1alpha1")
        self.namespace = os.environ["KUBERNETES_POD_NAMESPACE"]
        self.name = os.environ["KUBERNETES_POD_NAME"]
        self.worker_type = worker_type

    def _request(self, method: str, body: Json | None = None, query: str = "") -> Json:
        data = None if body is None else json.dumps(body).encode()
        url = f"{self.url}/{self.version}/replicas{query}"
        headers = {"Content-Type": "application/json"}
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                answer: Json = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            answer = json.loads(exc.read() or b"{}")
            raise RuntimeError(f"{method} {url}: {exc.code} {answer.get('message')}") from None
        return answer["data"]

    def replicas(self) -> Json:
        query = "?" + urlencode({"namespace": self.namespace, self.worker_type: self.name})
        return self._request("GET", query=query)

    def scale(self, sign: int, collectors: int = 0, learners: int = 0, gpus: int = 0) -> Json:
        body = {
            "namespace": self.namespace,
            "coordinator": self.name,
            "collectors": {"replicas": collectors},
            "learners": {"replicas": learners, "gpus": gpus},
        }
        return self._request("POST" if sign > 0 else "DELETE", body)
