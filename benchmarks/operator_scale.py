"""Operator scale: N ElasticJobs x R worker replicas reconciled by the kopf operator in this
process against the Kubernetes emulator (tests/support/k8s_emulator.py) in a process of its own
(benchmarks/emulator_process.py), over HTTP on 127.0.0.1, as an operator talks to an API server.

Measures the time from submitting every job until every replica's pod exists, until every pod
is Running (a stand-in for the kubelets in the emulator's process reports each at once) and
until every job's status counts them all Running; how long each reconcile pass took (p50/p99,
the passes that dispatched creates and the others apart); how long each job's dispatched
creates took from the pass handing them off to the last answer; and how late the operator's
event loop (kopf's) wakes from a 10 ms sleep.

What a pass covers (``reconcile_pass.reconcile_job``, timed by the work queue): reading the
job, its pods, services and ScalePlans (from the watch cache, which the pod watch's list at
start and the watches fill; listed from the API only every 60 s per job), deciding
(``core.operator.reconcile``), handing the runs of actions that create replicas (and those that only
record events) and its patch of the job's status to the dispatcher (``create_dispatch``: the
replicas are expected in the cache, the status patch applied to the cached job until answered,
the requests go out on its threads) without waiting for them, and applying the other actions
(deletes, services, ScalePlan updates) itself. A pass does not include the round trips of its
creates or its status patch; the creates' own time is the "job's creates" row, and end to end
the "all replicas created" and "status counts them Running" rows. Nor the time a job waits in
the queue: after a pod event (one that is not a failure or a deletion) or a change of the job's
status or metadata, up to ``--pod-batch`` seconds for more of its events to fold into one pass
(``work_queue.JobQueue.batch_period``), which the end-to-end rows include. "passes per job" and
"job status patches per job" say how many passes and status writes the run took. The pod
creates go out from one event loop of their own (``operator.kubernetes.pod_creates``);
``--client-creates`` sends them through the Kubernetes client, a thread each, as before.

Baseline: the same pods created straight through the platform (no kopf, no reconcile) against
a fresh emulator process, the same number of jobs at a time and each job's pods as many at a
time as a dispatch sends at most (it starts with one and widens: slow start), i.e. what the
API round trips alone cost, in total and per job. The two processes share this machine's CPUs:
the emulator's work still competes for them. Run from the repository root:

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
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.emulator_process import EmulatorProcess
from benchmarks.table import print_table
from flexjob.api import ElasticJob, PodTemplateSpec, ReplicaType
from flexjob.api.names import LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from flexjob.core.operator.actions import CreateReplica
from flexjob.core.replicas import ReplicaRequest, replica_name
from flexjob.operator.kubernetes.runner import (
    POD_EVENT_BATCH,
    OperatorConfig,
    make_queue,
    run_operator,
)
from flexjob.operator.reconcile_pass import PassResult
from flexjob.platform.kubernetes import KubernetesPlatform

TEMPLATE = {
    "spec": {"containers": [{"name": "main", "image": "python:3.11", "command": ["python"]}]}
}


def job(index: int, replicas: int) -> ElasticJob:
    spec = {"replicaSpecs": {"worker": {"replicas": replicas, "template": TEMPLATE}}}
    return ElasticJob.model_validate({"metadata": {"name": f"job-{index:03d}"}, "spec": spec})


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def wait_count(
    emulator: EmulatorProcess, replicas: int, what: str, target: int, deadline: float
) -> bool:
    """Poll the emulator process until its count ``what`` reaches ``target`` (or the deadline)."""
    while (await asyncio.to_thread(emulator.counts, replicas))[what] < target:
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def loop_lag(lags: list[float]) -> None:
    """How late a 10 ms sleep wakes: how busy kopf's event loop is."""
    while True:
        started = time.perf_counter()
        await asyncio.sleep(0.01)
        lags.append(time.perf_counter() - started - 0.01)


async def run_operator_case(
    jobs: int,
    replicas: int,
    workers: int,
    parallel: int,
    timeout: float,
    in_flight: int | None,
    settle_heap: bool = True,
    pod_batch: float = POD_EVENT_BATCH,
    client_creates: bool = False,
) -> tuple[dict[str, float], dict[str, int]]:
    """The run's measures, and the requests the emulator served by verb and resource (the
    operator's, kopf's and the benchmark's own job creates)."""
    with EmulatorProcess(kubelet=True) as emulator:
        platform = KubernetesPlatform.from_config(server=emulator.url)
        options = OperatorConfig(
            server=emulator.url,
            workers=workers,
            resync_interval=None,
            pod_event_batch=pod_batch,
            post_events=False,
            watch_timeout=60,
            settle_heap=settle_heap,
        )
        queue = make_queue(
            platform,
            workers,
            lambda: datetime.now(UTC),
            parallel,
            in_flight=in_flight,
            batch_period=pod_batch,
            connection=None if client_creates else options.connection,
        )
        ready = asyncio.Event()
        operator = asyncio.create_task(run_operator(platform, options, queue=queue, ready=ready))
        lags: list[float] = []
        lagging: asyncio.Task[None] | None = None
        total = jobs * replicas
        try:
            await asyncio.wait_for(ready.wait(), 30)
            cpu_started = (time.process_time(), emulator.cpu_seconds())
            started = time.monotonic()
            lagging = asyncio.create_task(loop_lag(lags))
            await asyncio.gather(
                *(asyncio.to_thread(platform.create_job, job(i, replicas)) for i in range(jobs))
            )
            deadline = started + timeout
            complete = await wait_count(emulator, replicas, "pods", total, deadline)
            elapsed = time.monotonic() - started
            await wait_count(emulator, replicas, "running", total, deadline)
            all_running = time.monotonic() - started
            await wait_count(emulator, replicas, "caught_up", jobs, deadline)
            caught_up = time.monotonic() - started
            await queue.wait_idle(30)
            cpu = (time.process_time() - cpu_started[0], emulator.cpu_seconds() - cpu_started[1])
        finally:
            if lagging is not None:
                lagging.cancel()
            operator.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(operator, 15)
        final = emulator.counts(replicas)
        served = emulator.requests()
    durations = queue.durations
    dispatched = queue.dispatcher.durations if queue.dispatcher is not None else []
    creating = [d for d, r in zip(durations, queue.results, strict=True) if _created(r)]
    others = [d for d, r in zip(durations, queue.results, strict=True) if not _created(r)]
    measures = {
        "creating": float(len(creating)),
        "creating_p50": percentile(creating, 0.50),
        "creating_p99": percentile(creating, 0.99),
        "others_p50": percentile(others, 0.50),
        "others_p99": percentile(others, 0.99),
        "dispatch_p50": percentile(dispatched, 0.50),
        "dispatch_p99": percentile(dispatched, 0.99),
        "seconds": elapsed,
        "running": all_running,
        "caught_up": caught_up,
        "caught_up_jobs": float(final["caught_up"]),
        "operator_cpu": cpu[0],
        "emulator_cpu": cpu[1],
        "lag_p50": percentile(lags, 0.50),
        "lag_p99": percentile(lags, 0.99),
        "complete": float(complete),
        "pods": float(final["pods"]),
        "passes": float(len(durations)),
        "thread_creating_p99": percentile([d for d, r in queue.on_thread if _created(r)], 0.99),
        "thread_others_p99": percentile([d for d, r in queue.on_thread if not _created(r)], 0.99),
        "thread_p50": percentile([d for d, _ in queue.on_thread], 0.50),
        "thread_p99": percentile([d for d, _ in queue.on_thread], 0.99),
        "p50": percentile(durations, 0.50),
        "p99": percentile(durations, 0.99),
        "mean": statistics.fmean(durations) if durations else float("nan"),
    }
    return measures, served


def _created(result: object) -> bool:
    """Whether a pass created replicas (handed their creates to the dispatcher)."""
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
) -> tuple[float, list[float], tuple[float, float]]:
    """The same pods created directly through the platform: ``workers`` jobs at a time, each
    job's replicas ``parallel`` at a time (what a reconcile pass that creates a job's
    replicas sends, without observing, deciding or kopf). The total seconds, each job's, and
    the CPU seconds of this process and of the emulator's."""
    with EmulatorProcess(kubelet=True) as emulator:
        platform = KubernetesPlatform.from_config(server=emulator.url)
        for j in range(jobs):  # the pods' owners (a create reads its job once, as a pass does)
            platform.create_job(job(j, replicas))
        pending = [[request(f"job-{j:03d}", i) for i in range(replicas)] for j in range(jobs)]
        per_job: list[float] = []
        cpu_started = (time.process_time(), emulator.cpu_seconds())
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
        elapsed = time.monotonic() - started
        cpu = (time.process_time() - cpu_started[0], emulator.cpu_seconds() - cpu_started[1])
        return elapsed, per_job, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--replicas", type=int, default=50, help="worker replicas per job")
    parser.add_argument("--workers", type=int, default=4, help="concurrent reconcile passes")
    parser.add_argument(
        "--parallel", type=int, default=16, help="actions one pass sends at once (at most)"
    )
    parser.add_argument(
        "--in-flight", type=int, default=None, help="creates in flight in the operator process"
    )
    parser.add_argument(
        "--switch-interval", type=float, default=None, help="sys.setswitchinterval (seconds)"
    )
    parser.add_argument(
        "--python-gc",
        action="store_true",
        help="keep Python's collector settings (flexjob operator settles the heap once started)",
    )
    parser.add_argument(
        "--pod-batch",
        type=float,
        default=POD_EVENT_BATCH,
        help="seconds a job waits for more pod events before its pass (0: none)",
    )
    parser.add_argument(
        "--client-creates",
        action="store_true",
        help="send pod creates through the Kubernetes client, a thread each (as before)",
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="give up after (seconds)")
    args = parser.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    logging.basicConfig(level=logging.WARNING)
    for noisy in ("kopf", "aiohttp.access", "flexjob"):
        logging.getLogger(noisy).setLevel(logging.ERROR)

    load = os.getloadavg()
    result, served = asyncio.run(
        run_operator_case(
            args.jobs,
            args.replicas,
            args.workers,
            args.parallel,
            args.timeout,
            args.in_flight,
            not args.python_gc,
            args.pod_batch,
            args.client_creates,
        )
    )
    baseline, per_job, base_cpu = asyncio.run(
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
        ("  passes per job", f"{result['passes'] / args.jobs:.1f}", "1", ""),
        (
            "  job status patches per job",
            f"{served.get('PATCH elasticjobs/status', 0) / args.jobs:.1f}",
            "",
            "",
        ),
        ("reconcile pass p50", f"{result['p50'] * 1000:.1f} ms", "", ""),
        (
            "reconcile pass p99 (goal < 200 ms)",
            f"{result['p99'] * 1000:.1f} ms",
            "",
            "",
        ),
        (
            f"  passes that dispatched creates ({int(result['creating'])}): p50 / p99",
            f"{result['creating_p50'] * 1000:.1f} / {result['creating_p99'] * 1000:.1f} ms",
            "",
            "",
        ),
        (
            "  the other passes: p50 / p99",
            f"{result['others_p50'] * 1000:.1f} / {result['others_p99'] * 1000:.1f} ms",
            "",
            "",
        ),
        (
            "  a pass's own work on its thread (no event loop part): p50 / p99",
            f"{result['thread_p50'] * 1000:.1f} / {result['thread_p99'] * 1000:.1f} ms",
            "",
            "",
        ),
        (
            "    p99 of those that dispatched creates / of the others",
            f"{result['thread_creating_p99'] * 1000:.1f} / "
            f"{result['thread_others_p99'] * 1000:.1f} ms",
            "",
            "",
        ),
        (
            "a job's creates (dispatched -> last answered): p50 / p99",
            f"{result['dispatch_p50'] * 1000:.1f} / {result['dispatch_p99'] * 1000:.1f} ms",
            f"{percentile(per_job, 0.5) * 1000:.1f} / {base_p99 * 1000:.1f} ms (one job's)",
            f"{result['dispatch_p99'] / base_p99:.2f}x",
        ),
    ]
    rows.append(
        (
            "CPU seconds: this process (operator / baseline client) / emulator",
            f"{result['operator_cpu']:.1f} / {result['emulator_cpu']:.1f} s",
            f"{base_cpu[0]:.1f} / {base_cpu[1]:.1f} s (until created)",
            "",
        )
    )
    rows.append(
        (
            "operator event loop lag (kopf's) p50 / p99",
            f"{result['lag_p50'] * 1000:.1f} / {result['lag_p99'] * 1000:.1f} ms",
            "",
            "",
        )
    )
    print_table(rows)
    print(f"\nAPI requests the emulator served during the run ({args.jobs} jobs):")
    print_table(
        [("request", "count", "per job")]
        + [
            (what, str(n), f"{n / args.jobs:.2f}")
            for what, n in sorted(served.items(), key=lambda item: -item[1])
        ]
    )
    in_flight = args.in_flight or args.workers * args.parallel
    print(
        f"\n{args.workers} reconcile workers; a dispatch has up to {args.parallel} creates in "
        f"flight, the operator process {in_flight} at most; baseline: "
        f"{args.workers} jobs at a time, each job's pods created {args.parallel} at a time and "
        "nothing else (the operator also reads its watch cache, writes one Event per replica type "
        "per pass and the job status, its pod watch handles every pod event and kopf every "
        "job event). A pod event lets its job wait "
        f"{args.pod_batch:g} s for more before its pass (--pod-batch). "
        + (
            "Creates go through the Kubernetes client, a thread each (--client-creates). "
            if args.client_creates
            else "Creates go out from one event loop of their own (operator.kubernetes."
            "pod_creates). "
        )
        + "A pass does not wait for the creates or the status patch it dispatches; "
        "the baseline's one "
        "job's creates are the floor of a job's dispatched creates on this machine. "
        "Collector: "
        + (
            "Python's defaults"
            if args.python_gc
            else "settled once the operator started, as "
            "flexjob operator does (runner.settle_heap; the baseline then runs with it too)"
        )
        + ". The emulator (and the kubelet stand-in) run in a process of their "
        "own, the operator in this one. Load average (1 min) at the start "
        f"{load[0]:.2f}, at the end {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs."
    )


if __name__ == "__main__":
    main()
