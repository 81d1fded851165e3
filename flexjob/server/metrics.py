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

        self.platform_reads = Counter(
            "flexjob_server_platform_reads",
            "Reads the server answered, by platform operation and source: platform (a call "
            "to the platform) or cache (answered from the server's read cache).",
            ("op", "source"),
            registry=self.registry,
        )

    def reads(self, source: str) -> int:
        """Reads answered from ``source`` (platform or cache) so far, every operation."""
        return int(
            sum(
                sample.value
                for metric in self.platform_reads.collect()
                for sample in metric.samples
                if sample.name.endswith("_total") and sample.labels.get("source") == source
            )
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
