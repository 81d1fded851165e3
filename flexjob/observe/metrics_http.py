"""The ``/metrics`` endpoint of a flexjob process: a small threaded HTTP server.

Binds ``127.0.0.1`` unless told otherwise (``--metrics-addr`` / ``$FLEXJOB_METRICS_ADDR``);
listening beyond loopback requires a bearer token (``$FLEXJOB_METRICS_TOKEN``), which every
scrape must then send as ``Authorization: Bearer TOKEN``. Not for what the metrics are
(``observe.metrics``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from prometheus_client.exposition import CONTENT_TYPE_LATEST

from flexjob.api import names
from flexjob.core.access.addresses import is_loopback
from flexjob.core.access.secrets import same_secret
from flexjob.observe import metrics

log = logging.getLogger(__name__)

OFF = "off"
#: How often the serving loop looks for a stop: ``stop`` waits up to this long (the standard
#: library's 0.5 s kept every finished agent and master half a second longer, issue 37).
STOP_POLL_S = 0.05


def parse_addr(text: str) -> tuple[str, int] | None:
    """``"HOST:PORT"`` → (host, port); ``"off"`` → None. Errors name the setting."""
    if text.strip().lower() == OFF:
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"metrics address must be HOST:PORT or 'off', got {text!r}")
    return host.strip("[]"), int(port)


@dataclass
class MetricsServer:
    server: ThreadingHTTPServer
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}/metrics"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(render: Callable[[], bytes], token: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] not in ("/metrics", "/"):
                self._send(404, b"not found: try /metrics\n", "text/plain")
                return
            if token and not same_secret(self.headers.get("Authorization", ""), f"Bearer {token}"):
                self._send(401, b"a bearer token is required\n", "text/plain")
                return
            self._send(200, render(), CONTENT_TYPE_LATEST)

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # scrapes every few seconds would flood the process's log

    return Handler


def serve(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    token: str = "",
    render: Callable[[], bytes] = metrics.render,
) -> MetricsServer:
    """Serve ``/metrics`` on ``host:port`` (0: a free port) from a daemon thread."""
    if not is_loopback(host) and not token:
        raise ValueError(
            f"metrics address {host}:{port} is beyond loopback: set {names.ENV_METRICS_TOKEN} "
            "(scrapers send it as a bearer token) or bind 127.0.0.1"
        )
    httpd = ThreadingHTTPServer((host, port), _handler(render, token))
    httpd.daemon_threads = True
    threading.Thread(
        target=httpd.serve_forever, args=(STOP_POLL_S,), name="flexjob-metrics", daemon=True
    ).start()
    bound = MetricsServer(httpd, host, int(httpd.server_address[1]))
    log.info("event=metrics_serving url=%s", bound.url)
    return bound


def serve_configured(
    addr: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    addr_file: Path | None = None,
) -> MetricsServer | None:
    """Serve as configured: ``addr`` (a command's ``--metrics-addr``), else
    ``$FLEXJOB_METRICS_ADDR``, else 127.0.0.1 on a free port; ``off`` serves nothing. Writes the
    bound ``HOST:PORT`` to ``addr_file`` when given (how tests and tools find a free port)."""
    env = os.environ if env is None else env
    parsed = parse_addr(addr or env.get(names.ENV_METRICS_ADDR) or names.DEFAULT_METRICS_ADDR)
    if parsed is None:
        return None
    server = serve(*parsed, token=env.get(names.ENV_METRICS_TOKEN, ""))
    if addr_file is not None:
        addr_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = addr_file.with_suffix(".tmp")
        tmp.write_text(server.address + "\n")
        tmp.replace(addr_file)
    return server
