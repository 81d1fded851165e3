"""What the master shows of itself: a ``MasterView`` (one consistent read of its numbers), the
Prometheus collector built on it, and the RPC latency timers (an interceptor for the threads
server, ``observe_rpc`` for the aio one).

Scrape-time values (shards todo/doing/done, world size, rounds, samples/s) come from the view;
event counts are made where the event happens (``observe.metrics``). Not for the timeline file
(``master.timeline``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import grpc
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from flexjob.api import names
from flexjob.core.training.rendezvous import Rendezvous
from flexjob.core.training.shards import ShardManager
from flexjob.master.stats import StatsBook
from flexjob.observe import metrics
from flexjob.rpc.server import timed_call


@dataclass(frozen=True, slots=True)
class DatasetView:
    name: str
    todo: int
    doing: int
    done: int
    total: int
    samples_done: int


@dataclass(frozen=True, slots=True)
class MasterView:
    job: str
    round: int
    world_size: int
    nodes_waiting: int
    samples_per_second: float
    step: int
    loss: float | None
    datasets: tuple[DatasetView, ...]

    @property
    def shards_done(self) -> int:
        return sum(d.done for d in self.datasets)

    @property
    def shards_total(self) -> int:
        return sum(d.total for d in self.datasets)


def _number(raw: bytes | None, kind: Callable[[str], Any]) -> Any:
    with contextlib.suppress(ValueError, UnicodeDecodeError):
        return kind(raw.decode()) if raw else None
    return None


class KVReader(Protocol):
    """What the view reads of the master's KV store (``master.kv.KVStore``)."""

    def get(self, key: str) -> bytes | None: ...


def master_view(
    job: str,
    shards: Mapping[str, ShardManager],
    rdzv: Rendezvous,
    stats: StatsBook,
    kv: KVReader,
) -> MasterView:
    """Read the master's parts (under the service's lock)."""
    world = rdzv.world
    datasets = []
    for name, mgr in shards.items():
        p = mgr.progress()
        datasets.append(
            DatasetView(name, p.todo, p.doing, p.shards_done, p.shards_total, p.samples_done)
        )
    return MasterView(
        job,
        rdzv.round,
        len(world.members) if world else 0,
        rdzv.num_nodes_waiting(),
        stats.job_samples_per_second(),
        _number(kv.get(names.KV_STEP), int) or 0,
        _number(kv.get(names.KV_LOSS), float),
        tuple(datasets),
    )


class MasterCollector(Collector):
    """Gauges read at scrape time from ``view()`` (a ``MasterService.view``)."""

    def __init__(self, view: Callable[[], MasterView]) -> None:
        self._view = view

    def collect(self) -> Iterator[Metric]:
        v = self._view()
        job = [v.job]

        def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
            g = GaugeMetricFamily(name, doc, labels=["job_name"])
            g.add_metric(job, value)
            return g

        yield gauge("flexjob_master_world_size", "Nodes in the current world.", v.world_size)
        yield gauge("flexjob_master_rendezvous_round", "The latest rendezvous round.", v.round)
        yield gauge(
            "flexjob_master_nodes_waiting", "Nodes waiting for the next round.", v.nodes_waiting
        )
        done = CounterMetricFamily(
            "flexjob_master_samples",
            "Samples in done shards, over every dataset (throughput: rate() of it).",
            labels=["job_name"],
        )
        done.add_metric(job, sum(d.samples_done for d in v.datasets))
        yield done
        yield gauge("flexjob_master_step", "Rank 0's last published step.", v.step)
        shards = GaugeMetricFamily(
            "flexjob_master_shards",
            "Data shards by state.",
            labels=["job_name", "dataset", "state"],
        )
        samples = GaugeMetricFamily(
            "flexjob_master_samples_done", "Samples in done shards.", labels=["job_name", "dataset"]
        )
        for d in v.datasets:
            for state, n in (("todo", d.todo), ("doing", d.doing), ("done", d.done)):
                shards.add_metric([v.job, d.name or "default", state], n)
            samples.add_metric([v.job, d.name or "default"], d.samples_done)
        yield shards
        yield samples


RPC_SECONDS = metrics.histogram(
    "flexjob_master_rpc_seconds",
    "Seconds the master took per RPC.",
    ["job_name", "method", "code"],
)

#: The job this master process serves (one job a process; ``serve_rpc_metrics_for``).
_JOB: list[str] = [""]
_RPC_TIMERS: dict[tuple[str, str], Any] = {}


def serve_rpc_metrics_for(job: str) -> None:
    """Label ``flexjob_master_rpc_seconds`` with ``job`` from now on (the master's start)."""
    _JOB[0] = job
    _RPC_TIMERS.clear()


def observe_rpc(method: str, code: str, seconds: float) -> None:
    """Count one RPC into ``flexjob_master_rpc_seconds`` (each server's timer calls it)."""
    timer = _RPC_TIMERS.get((method, code))
    if timer is None:
        labels = RPC_SECONDS.labels(job_name=_JOB[0], method=method, code=code)
        timer = _RPC_TIMERS[method, code] = labels
    timer.observe(seconds)


class RpcLatency(grpc.ServerInterceptor):  # type: ignore[misc]
    """Times every unary RPC into ``flexjob_master_rpc_seconds{job_name, method, code}``. A method's
    timed handler is made once (its server hands out the same handler for every call)."""

    def __init__(self) -> None:
        self._timed: dict[str, tuple[Any, Any]] = {}  # method → (its handler, timed one)

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        made = self._timed.get(details.method)
        if made is None or made[0] is not handler:
            made = self._timed[details.method] = (handler, _timed(handler, details.method))
        return made[1]


def _timed(handler: Any, path: str) -> Any:
    method = path.rsplit("/", 1)[-1]
    inner = handler.unary_unary

    def timed(request: Any, context: grpc.ServicerContext) -> Any:
        return timed_call(observe_rpc, method, context, lambda: inner(request, context))

    return grpc.unary_unary_rpc_method_handler(
        timed,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )
