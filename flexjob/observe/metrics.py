"""The metrics seam: one Prometheus registry per process, metrics made where they are used.

Adding a metric is one line at the place where the event happens::

    metrics.counter("flexjob_agent_restarts", "Worker restarts.").inc()
    metrics.histogram("flexjob_operator_reconcile_seconds", "One reconcile pass.").observe(dt)

``counter`` / ``gauge`` / ``histogram`` return the metric of that name, creating it on first
use; asking again with another kind or other labels is an error (one owner per name). Values
known only at scrape time come from a ``Collector`` given to ``register``. ``serve`` starts the
``/metrics`` endpoint (``metrics_http``). Not for the server's per-app registry
(``server.metrics``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

__all__ = ["REGISTRY", "counter", "gauge", "histogram", "register", "render", "unregister"]

#: This process's registry: every flexjob metric of the process, plus the process's own CPU,
#: memory and open files (``process_*``).
REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)

#: Latency buckets in seconds, from sub-millisecond RPCs to minute-long reconciles.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

M = TypeVar("M", bound=MetricWrapperBase)
_made: dict[str, MetricWrapperBase] = {}
_lock = threading.Lock()


def _get(kind: type[M], name: str, doc: str, labels: Sequence[str], **kw: object) -> M:
    with _lock:
        found = _made.get(name)
        if found is None:
            found = kind(name, doc, tuple(labels), registry=REGISTRY, **kw)  # type: ignore[arg-type]
            _made[name] = found
    if type(found) is not kind or tuple(found._labelnames) != tuple(labels):
        raise ValueError(
            f"metric {name!r} exists as {type(found).__name__}{list(found._labelnames)}, "
            f"asked for {kind.__name__}{list(labels)}"
        )
    return found


def counter(name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
    """The counter ``name`` (exported as ``name_total``)."""
    return _get(Counter, name, doc, labels)


def gauge(name: str, doc: str, labels: Sequence[str] = ()) -> Gauge:
    return _get(Gauge, name, doc, labels)


def histogram(
    name: str, doc: str, labels: Sequence[str] = (), buckets: Sequence[float] = LATENCY_BUCKETS
) -> Histogram:
    return _get(Histogram, name, doc, labels, buckets=tuple(buckets))


def register(collector: Collector) -> Collector:
    """Add a collector whose values are read at scrape time; returns it (for ``unregister``)."""
    REGISTRY.register(collector)
    return collector


def unregister(collector: Collector) -> None:
    with contextlib.suppress(KeyError):  # never registered or already gone
        REGISTRY.unregister(collector)


def render() -> bytes:
    """The registry in the Prometheus text format."""
    return generate_latest(REGISTRY)
