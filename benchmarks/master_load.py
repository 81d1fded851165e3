"""Load on the job master: N simulated agents over the real gRPC on loopback.

Starts a master child process (``spawn_master``; a fresh one for each phase), then client
processes, each with threads that share one channel. Measures (1) rendezvous: time from the
first join until every agent sees a complete world of N (the round completes when the N-th
joins: ``max_nodes = N``), and (2) shard dispatch, as shard requests/s (a shard's get and its
report count as two requests, however many calls carry them) and p99 latency per shard:
  get_shard            ``get_shard`` alone,
  pairs                ``get_shard`` + ``report_shard``, two calls per shard (flexjob before
                       leases, and the plain client's calls),
  lease-K              the trainer's ``ShardLeaser``: each report is sent at once and leases the
                       next K shards when none is queued (``LeaseShards``, ~one call per shard),
  paced lease-K        the same at a fixed total rate (``--paced-rate`` shards/s, open loop):
                       the latency a trainer sees when the master is not saturated.
Every accepted report is written to the state file before it is answered. The master serves
with ``--rpc-server`` (``MasterConfig.rpc_server``: threads by default, or aio); each
unpaced row also shows the master process's CPU time per shard (the number that a shared,
loaded machine disturbs least).
Baselines: the goal from the issue (1,000 agents in < 2 s; >= 5,000 shard requests/s; p99 <
10 ms), a bare unary call (a servicer that returns a constant ``Shard``) on both gRPC servers,
the thread pool ("bare gRPC") and ``grpc.aio`` ("bare aio"), measured on the same machine with
the same clients: the transport's ceiling per call (its rate, its CPU per call, and its p99 back
to back and paced at the paced row's rate: the latency floor on this machine under its present
load), and the pairs row (the previous flexjob's calls). Run it with each ``--rpc-server`` to
compare the master's two servers.

    PYTHONPATH=. python benchmarks/master_load.py [--agents 1000] [--procs 2] [--seconds 4]
        [--leases 1,8] [--paced-rate 1000] [--rpc-server aio|threads]
"""

import argparse
import asyncio
import multiprocessing as mp
import os
import queue
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from flexjob.core.dataset import Dataset
from flexjob.core.master_config import RPC_SERVERS, MasterConfig
from flexjob.master.launch import spawn_master
from flexjob.rpc.client import MasterClient, open_channel
from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.gen import master_pb2_grpc as pb_grpc
from flexjob.trainer.lease import ShardLeaser
from flexjob.trainer.sampler import NoShard


class _ConstantServicer(pb_grpc.MasterServicer):
    def GetShard(self, request: pb.GetShardRequest, context: object) -> pb.Shard:
        return pb.Shard(has_shard=True, shard_id=1, start=0, end=10)


class _AioConstantServicer(pb_grpc.MasterServicer):
    async def GetShard(self, request: pb.GetShardRequest, context: object) -> pb.Shard:
        return pb.Shard(has_shard=True, shard_id=1, start=0, end=10)


def _bare_server(workers: int, port_out: Any, stop: Any) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(workers))
    pb_grpc.add_MasterServicer_to_server(_ConstantServicer(), server)  # type: ignore[no-untyped-call]
    port_out.put(server.add_insecure_port("127.0.0.1:0"))
    server.start()
    stop.wait()
    server.stop(0)


def _bare_aio_server(workers: int, port_out: Any, stop: Any) -> None:
    async def serve() -> None:
        server = grpc.aio.server()
        pb_grpc.add_MasterServicer_to_server(_AioConstantServicer(), server)  # type: ignore[no-untyped-call]
        port_out.put(server.add_insecure_port("127.0.0.1:0"))
        await server.start()
        await asyncio.get_running_loop().run_in_executor(None, stop.wait)
        await server.stop(0)

    asyncio.run(serve())


@dataclass
class _Bare:
    """A bare server's call rate back to back, its latencies per call back to back and paced
    like the paced row, and its CPU seconds per call back to back."""

    rate: float
    lat: list[float]
    paced: list[float]
    cpu_per_call: float


def _bare_grpc(
    procs: int, threads: int, seconds: float, workers: int, paced: float, aio: bool
) -> _Bare:
    """``paced``: seconds between one thread's calls (0: no paced run); ``aio``: the
    ``grpc.aio`` server (one event loop) instead of the thread pool."""
    ctx = mp.get_context("fork")
    port_q, stop = ctx.Queue(), ctx.Event()
    target = _bare_aio_server if aio else _bare_server
    server = ctx.Process(target=target, args=(workers, port_q, stop))
    server.start()
    address = f"127.0.0.1:{port_q.get(timeout=30)}"
    try:
        lats, cpu = [], 0.0
        for interval in (0.0, paced) if paced else (0.0,):
            per = [(address, f"bare{p}", threads, seconds, "get", interval) for p in range(procs)]
            before = _cpu_s(server.pid)
            _, *out = _run_procs(_shard_worker, per)
            cpu = cpu or _cpu_s(server.pid) - before
            lats.append(sorted(x for lat in out for x in lat))
    finally:
        stop.set()
        server.join(10)
    return _Bare(
        len(lats[0]) / seconds, lats[0], lats[-1] if paced else [], cpu / max(1, len(lats[0]))
    )


def _cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) process ``pid`` used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _p99_ms(latencies: list[float]) -> float:
    return statistics.quantiles(latencies, n=100)[98] * 1000 if len(latencies) > 100 else 0.0


def _rendezvous_worker(address: str, nodes: list[str], threads: int, start: Any, out: Any) -> None:
    channel = open_channel(address)
    clients = [MasterClient(address, n, channel=channel) for n in nodes]
    for c in clients[:1]:
        c.nodes_waiting()  # connect before the clock starts
    start.wait()
    parts = [clients[i::threads] for i in range(threads)]

    def run(part: list[MasterClient]) -> None:
        for c in part:
            c.join()
        for c in part:
            while not c.get_world().complete:
                time.sleep(0.01)

    ts = [threading.Thread(target=run, args=(p,)) for p in parts]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out.put(time.time())


def _shard_worker(
    address: str,
    prefix: str,
    threads: int,
    seconds: float,
    mode: str,
    interval: float,
    start: Any,
    out: Any,
) -> None:
    """``threads`` clients run ``mode`` (get, pairs, lease-K) for ``seconds``; each shard at
    most every ``interval`` seconds (0: back to back). Puts the latencies per shard."""
    channel = open_channel(address)
    clients = [MasterClient(address, f"{prefix}-{i}", channel=channel) for i in range(threads)]
    clients[0].get_shard()  # connect before the clock starts
    lease = int(mode.removeprefix("lease-")) if mode.startswith("lease-") else 0
    start.wait()
    latencies: list[list[float]] = [[] for _ in clients]
    stop_at = time.monotonic() + seconds

    def run(i: int) -> None:
        c, lat = clients[i], latencies[i]
        leaser = ShardLeaser(c, lease) if lease else None
        next_at = time.monotonic()
        while (now := time.monotonic()) < stop_at:
            if interval:
                if now < next_at:
                    time.sleep(next_at - now)
                next_at += interval
            t0 = time.perf_counter()
            if leaser is not None:
                got = leaser.get_shard("")
                if not isinstance(got, NoShard):
                    leaser.report_shard("", got.shard_id)
            else:
                shard = c.get_shard()
                if mode == "pairs" and shard.has_shard:
                    c.report_shard(shard.shard_id)
            lat.append(time.perf_counter() - t0)  # one shard: its get (+ its report)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out.put([x for lat in latencies for x in lat])


def _run_procs(target: Callable[..., None], args_per_proc: list[tuple[Any, ...]]) -> list[Any]:
    ctx = mp.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*a, start, out)) for a in args_per_proc]
    for p in procs:
        p.start()
    time.sleep(1.0)  # let every process connect
    t0 = time.time()
    start.set()
    results: list[Any] = []
    while len(results) < len(procs):
        try:
            results.append(out.get(timeout=1))
        except queue.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                raise RuntimeError("a client process failed") from None
    for p in procs:
        p.join(10)
    return [t0, *results]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=16, help="client threads per process")
    ap.add_argument("--seconds", type=float, default=4.0, help="per shard phase")
    ap.add_argument("--rpc-workers", type=int, default=16, help="master RPC threads (threads)")
    ap.add_argument(
        "--rpc-server",
        choices=RPC_SERVERS,
        default=MasterConfig().rpc_server,
        help="the master's gRPC server (MasterConfig.rpc_server)",
    )
    ap.add_argument("--leases", default="1,8", help="lease sizes to measure (comma-separated)")
    ap.add_argument(
        "--paced-rate", type=float, default=1000.0, help="shards/s of the paced run (0: none)"
    )
    args = ap.parse_args()
    load = os.getloadavg()
    leases = [int(k) for k in args.leases.split(",") if k]
    clients = args.procs * args.threads
    # (name, mode, seconds between one thread's shards; 0: back to back)
    phases = [("get_shard", "get", 0.0), ("pairs", "pairs", 0.0)]
    phases += [(f"lease-{k}", f"lease-{k}", 0.0) for k in leases]
    if args.paced_rate:
        k = leases[-1] if leases else 1
        phases.append((f"paced lease-{k}", f"lease-{k}", clients / args.paced_rate))

    with tempfile.TemporaryDirectory(prefix="flexjob-bench-") as tmp:

        def config(n: int) -> MasterConfig:
            return MasterConfig(
                job_name="bench",
                job_dir=str(Path(tmp) / f"job-{n}"),
                min_nodes=args.agents,
                max_nodes=args.agents,
                last_call_timeout=60.0,
                heartbeat_timeout=600.0,
                datasets=(Dataset(size=5_000_000, shard_size=10),),
                host_store=False,
                rpc_server=args.rpc_server,
                rpc_workers=args.rpc_workers,
            )

        master = spawn_master(config(0))
        try:
            nodes = [f"agent-{i}" for i in range(args.agents)]
            per = [
                (master.address, nodes[p :: args.procs], args.threads) for p in range(args.procs)
            ]
            t0, *ends = _run_procs(_rendezvous_worker, per)
            rdzv_s = max(ends) - t0
        finally:
            master.stop()
        rows = []
        for n, (name, mode, interval) in enumerate(phases, 1):
            # A fresh master per phase: what one phase leaves (the get_shard phase's shards are
            # never reported) does not weigh on the next.
            master = spawn_master(config(n))
            try:
                per_s = [
                    (master.address, f"p{p}", args.threads, args.seconds, mode, interval)
                    for p in range(args.procs)
                ]
                before = _cpu_s(master.process.pid)
                _, *lats = _run_procs(_shard_worker, per_s)
                cpu = _cpu_s(master.process.pid) - before
            finally:
                master.stop()
            flat = sorted(x for lat in lats for x in lat)
            per_shard = 1 if mode == "get" else 2  # a get and its report: two requests
            rate = len(flat) * per_shard / args.seconds
            rows.append((name, rate, _p99_ms(flat), cpu / max(1, len(flat))))
    paced = clients / args.paced_rate if args.paced_rate else 0.0
    bares = [
        _bare_grpc(args.procs, args.threads, args.seconds, args.rpc_workers, paced, aio)
        for aio in (False, True)
    ]

    def vs(value: float, *bases: float) -> list[str]:
        return [x for b in bases for x in (f"{b:,.1f}", f"{value / b:.2f}" if b else "-")]

    pairs = next(rate for name, rate, *_ in rows if name == "pairs")
    table = [
        ("rendezvous completion (s)", args.agents, f"{rdzv_s:.2f}", "< 2.00", *["-"] * 5),
    ]
    for name, rate, p99, cpu in rows:
        vs_pairs = f"{rate / pairs:.2f}" if name != "get_shard" else "-"
        table.append(
            (
                f"{name} shard requests/s",
                clients,
                f"{rate:,.0f}",
                ">= 5,000",
                *vs(rate, *(b.rate for b in bares)),
                vs_pairs,
            )
        )
        paced_row = name.startswith("paced")
        p99s = [_p99_ms(b.paced if paced_row else b.lat) for b in bares]
        table.append(
            ("  p99 latency per shard (ms)", clients, f"{p99:.1f}", "< 10", *vs(p99, *p99s), "-")
        )
        if not paced_row:
            cpus = [b.cpu_per_call * 1e6 for b in bares]
            row = (
                "  master CPU per shard (us)",
                clients,
                f"{cpu * 1e6:.0f}",
                "-",
                *vs(cpu * 1e6, *cpus),
                "-",
            )
            table.append(row)
    header = (
        "workload",
        "agents",
        f"flexjob ({args.rpc_server})",
        "goal",
        "bare gRPC",
        "vs bare",
        "bare aio",
        "vs aio",
        "vs pairs",
    )
    widths = [max(len(str(r[i])) for r in (header, *table)) for i in range(len(header))]
    for r in (header, *table):
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))
    print(
        f"\nbare gRPC (a thread pool of {args.rpc_workers}) and bare aio (grpc.aio, one event "
        f"loop): one constant reply per call from {args.procs}x{args.threads} clients; p99 "
        "back to back (unpaced rows) and paced at the paced row's rate; their CPU per call "
        "back to back. Load average "
        f"(1 min) at the start {load[0]:.2f}, at the end {os.getloadavg()[0]:.2f} on "
        f"{os.cpu_count()} CPUs: latency on a shared machine follows it."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
