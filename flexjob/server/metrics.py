"""Prometheus metrics of the server, in a registry of its own (one per app).

For: request counts and latencies by route, and scale/profiling operations by job. Served at
``/metrics`` in the Prometheus text format. Not for training metrics (the master has those).
"""

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "ServerMetrics"]


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "flexjob_server_requests",
            "HTTP requests handled, by method, route and status code.",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "flexjob_server_request_seconds",
            "Seconds spent handling a request, by route.",
            ("route",),
            registry=self.registry,
        )
        self.scale_requests = Counter(
            "flexjob_server_scale_requests",
            "Replica count changes accepted, by API version and direction (up/down).",
            ("api", "direction"),
            registry=self.registry,
        )
        self.profilings = Counter(
            "flexjob_server_profilings",
            "Profiling reports merged into job status.",
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
