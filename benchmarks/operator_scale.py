"""Operator scale: N ElasticJobs x R worker replicas reconciled by the kopf operator on the
Kubernetes emulator (tests/support/k8s_emulator.py), all in this process.

Measures the time from submitting every job until every replica's pod exists, until every pod
is Running (a stand-in for the kubelets reports each at once) and until every job's status
counts them all Running, and how long each reconcile pass took (p50/p99). Baseline: the same
pods created straight through the platform (no kopf, no reconcile), the same number of jobs
at a time and each job's pods as many at a time as a pass sends at most (a pass starts with
one and doubles: slow start), i.e. what the API round trips alone cost, in total and per job.
The emulator serves from this process's event loop, which kopf shares: its work and the
operator's compete for one interpreter.
Run from the repository root:

    PYTHONPATH=$PWD python benchmarks/operator_scale.py --jobs 100 --replicas 50
"""

import argparse
import asyncio
import contextlib
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import kmock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.table import print_table
from flexjob.api import ElasticJob, PodTemplateSpec, ReplicaType
from flexjob.api.names import LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from flexjob.core.actions import CreateReplica
from flexjob.core.replicas import ReplicaRequest, replica_name
from flexjob.operator.kubernetes.runner import OperatorConfig, make_queue, run_operator
from flexjob.operator.reconcile_pass import PassResult
from flexjob.platform.kubernetes import KubernetesPlatform
from tests.support.k8s_emulator import K8sEmulator
from tests.support.k8s_fixtures import ELASTICJOBS, SCALEPLANS

MERGE = "application/merge-patch+json"
TEMPLATE = {
    "spec": {"containers": [{"name": "main", "image": "python:3.11", "command": ["python"]}]}
}


def job(index: int, replicas: int) -> ElasticJob:
    spec = {"replicaSpecs": {"worker": {"replicas": replicas, "template": TEMPLATE}}}
    return ElasticJob.model_validate({"metadata": {"name": f"job-{index:03d}"}, "spec": spec})


def pods_of(emulator: K8sEmulator) -> int:
    return len(emulator.store.select(emulator.kind("", "v1", "pods"), "default"))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def wait_pods(emulator: K8sEmulator, total: int, deadline: float) -> bool:
    while pods_of(emulator) < total:
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def kubelet(emulator: K8sEmulator) -> None:
    """Stand in for the kubelets: report every new pod Running at once (in the store, as a
    kubelet's status update lands), so that the operator sees each pod change once more."""
    pods = emulator.kind("", "v1", "pods")
    running = {"status": {"phase": "Running"}}
    while True:
        for body in emulator.store.select(pods, "default"):
            if (body.get("status") or {}).get("phase") != "Running":
                name = body["metadata"]["name"]
                emulator.store.patch(pods, "default", name, running, MERGE, "status")
                await emulator.notify()  # each update wakes the watches, as a kubelet's request
        await asyncio.sleep(0.05)


def running_of(emulator: K8sEmulator) -> int:
    pods = emulator.store.select(emulator.kind("", "v1", "pods"), "default")
    return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")


def jobs_caught_up(emulator: K8sEmulator, replicas: int) -> int:
    """Jobs whose status counts all their workers Running (the operator has seen them)."""
    caught_up = 0
    for body in emulator.store.select(ELASTICJOBS, "default"):
        counts = ((body.get("status") or {}).get("replicaStatuses") or {}).get("worker") or {}
        caught_up += counts.get("active") == replicas and not counts.get("pending")
    return caught_up


async def wait_until(condition: Callable[[], bool], deadline: float) -> bool:
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def loop_lag(lags: list[float]) -> None:
    """How late a 10 ms sleep wakes: how busy the event loop kopf and the emulator share is."""
    while True:
        started = time.perf_counter()
        await asyncio.sleep(0.01)
        lags.append(time.perf_counter() - started - 0.01)


async def run_operator_case(
    jobs: int, replicas: int, workers: int, parallel: int, timeout: float
) -> dict[str, float]:
    async with K8sEmulator() as emulator, kmock.Server(emulator):
        emulator.declare(ELASTICJOBS)
        emulator.declare(SCALEPLANS)
        platform = KubernetesPlatform.from_config(server=emulator.base_url)
        options = OperatorConfig(
            server=emulator.base_url,
            workers=workers,
            resync_interval=None,
            post_events=False,
            watch_timeout=60,
        )
        queue = make_queue(platform, workers, clock=lambda: datetime.now(UTC), parallel=parallel)
        ready = asyncio.Event()
        operator = asyncio.create_task(run_operator(platform, options, queue=queue, ready=ready))
        lags: list[float] = []
        helpers: list[asyncio.Task[None]] = []
        try:
            await asyncio.wait_for(ready.wait(), 30)
            started = time.monotonic()
            helpers = [asyncio.create_task(kubelet(emulator)), asyncio.create_task(loop_lag(lags))]
            await asyncio.gather(
                *(asyncio.to_thread(platform.create_job, job(i, replicas)) for i in range(jobs))
            )
            complete = await wait_pods(emulator, jobs * replicas, started + timeout)
            elapsed = time.monotonic() - started
            total = jobs * replicas
            await wait_until(lambda: running_of(emulator) == total, started + timeout)
            all_running = time.monotonic() - started
            await wait_until(lambda: jobs_caught_up(emulator, replicas) == jobs, started + timeout)
            caught_up = time.monotonic() - started
            await queue.wait_idle(30)
        finally:
            for helper in helpers:
                helper.cancel()
            operator.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(operator, 15)
        durations = queue.durations
        creating = [d for d, r in zip(durations, queue.results, strict=True) if _created(r)]
        others = [d for d, r in zip(durations, queue.results, strict=True) if not _created(r)]
        return {
            "creating": float(len(creating)),
            "creating_p99": percentile(creating, 0.99),
            "others_p50": percentile(others, 0.50),
            "others_p99": percentile(others, 0.99),
            "seconds": elapsed,
            "running": all_running,
            "caught_up": caught_up,
            "caught_up_jobs": float(jobs_caught_up(emulator, replicas)),
            "lag_p50": percentile(lags, 0.50),
            "lag_p99": percentile(lags, 0.99),
            "complete": float(complete),
            "pods": float(pods_of(emulator)),
            "passes": float(len(durations)),
            "p50": percentile(durations, 0.50),
            "p99": percentile(durations, 0.99),
            "mean": statistics.fmean(durations) if durations else float("nan"),
        }


def _created(result: object) -> bool:
    """Whether a pass created replicas (its time is mostly those creates)."""
    actions = result.result.actions if isinstance(result, PassResult) else ()
    return any(isinstance(a, CreateReplica) for a in actions)


def request(job_name: str, index: int) -> ReplicaRequest:
    labels = {
        LABEL_JOB_NAME: job_name,
        LABEL_REPLICA_TYPE: "worker",
        LABEL_REPLICA_INDEX: str(index),
    }
    return ReplicaRequest(
        namespace="default",
        job=job_name,
        type=ReplicaType.WORKER,
        index=index,
        name=replica_name(job_name, ReplicaType.WORKER, index),
        command=("python",),
        args=(),
        env={},
        labels=labels,
        resources={},
        template=PodTemplateSpec.model_validate(TEMPLATE),
    )


async def run_baseline(
    jobs: int, replicas: int, workers: int, parallel: int
) -> tuple[float, list[float]]:
    """The same pods created directly through the platform: ``workers`` jobs at a time, each
    job's replicas ``parallel`` at a time (what a reconcile pass that creates a job's
    replicas sends, without observing, deciding or kopf). The total seconds and each job's."""
    async with K8sEmulator() as emulator, kmock.Server(emulator):
        emulator.declare(ELASTICJOBS)
        platform = KubernetesPlatform.from_config(server=emulator.base_url)
        pending = [[request(f"job-{j:03d}", i) for i in range(replicas)] for j in range(jobs)]
        per_job: list[float] = []
        started = time.monotonic()

        def create_job_replicas(job_requests: list[ReplicaRequest]) -> None:
            with ThreadPoolExecutor(parallel) as pool:
                list(pool.map(platform.create_replica, job_requests))

        async def worker() -> None:
            while pending:
                job_requests = pending.pop(0)
                job_started = time.perf_counter()
                await asyncio.to_thread(create_job_replicas, job_requests)
                per_job.append(time.perf_counter() - job_started)

        await asyncio.gather(*(worker() for _ in range(workers)))
        return time.monotonic() - started, per_job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--replicas", type=int, default=50, help="worker replicas per job")
    parser.add_argument("--workers", type=int, default=4, help="concurrent reconcile passes")
    parser.add_argument(
        "--parallel", type=int, default=16, help="actions one pass sends at once (at most)"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="give up after (seconds)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    for noisy in ("kopf", "aiohttp.access", "flexjob"):
        logging.getLogger(noisy).setLevel(logging.ERROR)

    load = os.getloadavg()
    result = asyncio.run(
        run_operator_case(args.jobs, args.replicas, args.workers, args.parallel, args.timeout)
    )
    baseline, per_job = asyncio.run(
        run_baseline(args.jobs, args.replicas, args.workers, args.parallel)
    )
    base_p99 = percentile(per_job, 0.99)
    total = args.jobs * args.replicas
    workload = f"{args.jobs} jobs x {args.replicas} replicas"
    status = "" if result["complete"] else f" (INCOMPLETE: {int(result['pods'])}/{total} pods)"
    rows = [
        ("workload", "flexjob (kopf + reconcile)", "baseline (direct creates)", "ratio"),
        (
            f"{workload}: all replicas created",
            f"{result['seconds']:.1f} s{status}",
            f"{baseline:.1f} s",
            f"{result['seconds'] / baseline:.2f}x",
        ),
        (
            "  all replicas Running (a kubelet stand-in reports each at once)",
            f"{result['running']:.1f} s",
            "",
            "",
        ),
        (
            "  every job's status counts them Running",
            f"{result['caught_up']:.1f} s ({int(result['caught_up_jobs'])}/{args.jobs} jobs)",
            "",
            "",
        ),
        (
            "replicas created per second",
            f"{total / result['seconds']:.0f}",
            f"{total / baseline:.0f}",
            "",
        ),
        ("reconcile passes", f"{int(result['passes'])}", f"{args.jobs} (one per job)", ""),
        ("reconcile pass p50", f"{result['p50'] * 1000:.1f} ms", "", ""),
        (
            "reconcile pass p99 (goal < 200 ms)",
            f"{result['p99'] * 1000:.1f} ms",
            "",
            "",
        ),
        (
            f"  passes that created replicas ({int(result['creating'])}): p99",
            f"{result['creating_p99'] * 1000:.1f} ms",
            f"{base_p99 * 1000:.1f} ms (one job's)",
            f"{result['creating_p99'] / base_p99:.2f}x",
        ),
        (
            "  the other passes: p50 / p99",
            f"{result['others_p50'] * 1000:.1f} / {result['others_p99'] * 1000:.1f} ms",
            "",
            "",
        ),
    ]
    rows.append(
        (
            "event loop lag (kopf's and the emulator's) p50 / p99",
            f"{result['lag_p50'] * 1000:.1f} / {result['lag_p99'] * 1000:.1f} ms",
            "",
            "",
        )
    )
    print_table(rows)
    print(
        f"\n{args.workers} reconcile workers x {args.parallel} actions in flight; baseline: "
        f"{args.workers} jobs at a time, each job's pods created {args.parallel} at a time and "
        "nothing else (the operator also lists the job, its pods, services and ScalePlans on "
        "its first pass and reads its watch cache afterwards, writes one Event per replica type "
        "per pass and the job status, and kopf handles every pod event). The slowest passes are "
        "the ones that create a job's replicas: the baseline p99 is the floor such a pass has "
        "on this machine. Load average (1 min) at the start "
        f"{load[0]:.2f}, at the end {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs."
    )


if __name__ == "__main__":
    main()
