"""Load on the job master: N simulated agents over the real gRPC on loopback.

Starts a master child process (``spawn_master``; a fresh one for each phase), then client
processes, each with threads that share one channel. Measures (1) rendezvous: time from the
first join until every agent sees a complete world of N (the round completes when the N-th
joins: ``max_nodes = N``), and (2) shard dispatch, as shard requests/s (a shard's get and its
report count as two requests, however many calls carry them), p50 and p99 latency per shard
and the client processes' CPU (whether the callers, not the master, ran out of CPU):
  get_shard            ``get_shard`` alone,
  pairs                ``get_shard`` + ``report_shard``, two calls per shard (flexjob before
                       leases, and the plain client's calls),
  lease-K              the trainer's ``ShardLeaser``: each report is sent at once and leases the
                       next K shards when none is queued (~one request per shard, on the
                       client's shard stream, ``rpc.shard_stream``),
  lease-K unary        the same, each request a unary ``LeaseShards`` call (the previous
                       flexjob, before shard streams),
  batched-K            (``--batched``) reports held back to ride on the next lease call: each
                       call reports the K shards of the call before and leases K more, one
                       call per K shards (the trainer does not: ``trainer.lease`` says why),
  paced lease-K        the same at fixed total rates (``--paced-rate`` shards/s, each thread
                       paced, catching up when late): the latency-vs-throughput curve a
                       trainer sees below the master's saturation; @2,500 shards/s is
                       the issue's pair of goals measured together (5,000 shard
                       requests/s paced, p99 < 10 ms).
Every accepted report is written to the state file before it is answered. The master serves
with ``--rpc-server`` (``MasterConfig.rpc.server``: threads by default, or aio); each
unpaced row also shows the master process's CPU time per shard (the number that a shared,
loaded machine disturbs least).
Every phase runs in each layout of ``--pin`` (default all three): ``off`` (master, clients and
bare servers anywhere on the machine's CPUs), ``master`` (the master on the first CPU this
process may use, by ``MasterConfig.cpu``, and each bare server there too; the clients anywhere)
and ``split`` (the same, the client processes on the other CPUs, so they do not take the
master's CPU, as in a deployment where they run on other machines). On one CPU a server's
threads hand the GIL to each other without waking each other across CPUs.
Baselines: the goal from the issue (1,000 agents in < 2 s; >= 5,000 shard requests/s; p99 <
10 ms), a bare unary call (a servicer that returns a constant ``Shard``) on both gRPC servers
with the master's server options (``rpc.server.MASTER_SERVER_OPTIONS``),
the thread pool ("bare gRPC") and ``grpc.aio`` ("bare aio"), measured on the same machine with
the same clients and the same pinning: the transport's ceiling per call (its rate, its CPU per
call, and its p99 back to back and paced at each paced row's rate: the latency floor on this
machine under its present load), and the pairs row (the previous flexjob's calls). Run it with
each ``--rpc-server`` to compare the master's two servers.

    PYTHONPATH=. python benchmarks/master_load.py [--agents 1000] [--procs 2] [--seconds 4]
        [--leases 1,8] [--paced-rate 1250,2000,2500] [--rpc-server aio|threads]
        [--pin off,master,split] [--save-rows FILE] [--baseline FILE]

``--save-rows`` keeps a run's rows (e.g. ``--no-fsync``) and ``--baseline`` sets a later run's
against them, as ratios: e.g. fsync on vs off, or a branch vs main.
"""

import argparse
import json
import multiprocessing as mp
import os
import queue
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bare_servers import bare_aio_server, bare_server
from benchmarks.cpu_layout import LAYOUTS, Cpus, on_cpus
from benchmarks.master_load_table import (
    Bare,
    Row,
    baseline_table,
    p99_ms,
    pct_ms,
    rows_json,
    rows_table,
)
from benchmarks.proc_cpu import CpuWindow, children_cpu_s, process_cpu_s
from benchmarks.table import print_table
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import (
    RPC_SERVERS,
    MasterConfig,
    NodeHealthConfig,
    PersistenceConfig,
    RpcConfig,
)
from flexjob.core.training.rendezvous import RendezvousConfig
from flexjob.master.launch import spawn_master
from flexjob.master.main import METRICS_ADDR_FILE
from flexjob.rpc.client import MasterClient, open_channel
from flexjob.trainer.lease import ShardLeaser
from flexjob.trainer.sampler import NoShard


def _bare_grpc(
    procs: int,
    threads: int,
    seconds: float,
    workers: int,
    paced: list[float],
    aio: bool,
    cpus: Cpus,
) -> Bare:
    """``paced``: seconds between one thread's calls, one run each (after the run back to
    back); ``aio``: the ``grpc.aio`` server (one event loop) instead of the thread pool."""
    ctx = mp.get_context("fork")
    port_q, stop = ctx.Queue(), ctx.Event()
    target = bare_aio_server if aio else bare_server
    on = None if cpus.server is None else frozenset({cpus.server})
    server = ctx.Process(target=on_cpus, args=(on, target, workers, port_q, stop))
    server.start()
    address = f"127.0.0.1:{port_q.get(timeout=30)}"
    try:
        lats: dict[float, list[float]] = {}
        cpu = 0.0
        for interval in (0.0, *paced):
            per = [(address, f"bare{p}", threads, seconds, "get", interval) for p in range(procs)]
            before = process_cpu_s(server.pid)
            _, *out = _run_procs(_shard_worker, per, cpus.clients)
            cpu = cpu or process_cpu_s(server.pid) - before
            lats[interval] = sorted(x for lat in out for x in lat)
    finally:
        stop.set()
        server.join(10)
    back_to_back = lats.pop(0.0)
    return Bare(len(back_to_back) / seconds, back_to_back, lats, cpu / max(1, len(back_to_back)))


def _inside_p99_ms(job_dir: Path) -> float:
    """The p99 of the master's own time per call (from receiving the request to returning
    the reply: ``flexjob_master_rpc_seconds``, all methods) as the upper bound of its
    histogram bucket, in ms, scraped from the master's ``/metrics``; 0 when not served."""
    try:
        address = (job_dir / METRICS_ADDR_FILE).read_text().strip()
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as reply:
            text = reply.read().decode()
    except OSError:
        return 0.0
    counts: dict[float, float] = {}
    for line in text.splitlines():
        if line.startswith("flexjob_master_rpc_seconds_bucket{") and 'code="OK"' in line:
            le = line.split('le="', 1)[1].split('"', 1)[0]
            bound = float("inf") if le == "+Inf" else float(le)
            counts[bound] = counts.get(bound, 0.0) + float(line.rsplit(" ", 1)[1])
    total = counts.get(float("inf"), 0.0)
    bound = next((b for b in sorted(counts) if counts[b] >= 0.99 * total), 0.0)
    return bound * 1000 if total else 0.0


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
    """``threads`` clients run ``mode`` (get, pairs, lease-K, batched-K) for ``seconds``; each
    shard at most every ``interval`` seconds (0: back to back). Puts the latencies per shard."""
    channel = open_channel(address)
    stream = not mode.startswith("unary ")
    mode = mode.removeprefix("unary ")
    clients = [
        MasterClient(address, f"{prefix}-{i}", channel=channel, shard_stream=stream)
        for i in range(threads)
    ]
    clients[0].get_shard()  # connect before the clock starts
    lease = int(mode.removeprefix("lease-")) if mode.startswith("lease-") else 0
    batched = int(mode.removeprefix("batched-")) if mode.startswith("batched-") else 0
    start.wait()
    latencies: list[list[float]] = [[] for _ in clients]
    stop_at = time.monotonic() + seconds

    def run(i: int) -> None:
        c, lat = clients[i], latencies[i]
        if batched:
            return _batched(c, batched, stop_at, lat)
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


def _batched(client: MasterClient, k: int, stop_at: float, lat: list[float]) -> None:
    """Reports held back to ride on the next lease: each call reports the last call's ``k``
    shards and leases ``k`` more (what the trainer does not do, ``trainer.lease``: measured to
    show what it would give). Each reported shard counts the latency of the call that
    reported it."""
    done: list[int] = []
    while time.monotonic() < stop_at:
        t0 = time.perf_counter()
        lease = client.lease_shards(k, done, "")
        lat.extend([time.perf_counter() - t0] * len(done))
        done = [s.shard_id for s in lease.shards]


def _run_procs(
    target: Callable[..., None],
    args_per_proc: list[tuple[Any, ...]],
    cpus: frozenset[int] | None = None,
    window: CpuWindow | None = None,
) -> list[Any]:
    """One process per args, each confined to ``cpus`` (None: anywhere); started together,
    their results once each is done, after the start time; ``window`` measured meanwhile."""
    ctx = mp.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=on_cpus, args=(cpus, target, *a, start, out)) for a in args_per_proc
    ]
    for p in procs:
        p.start()
    time.sleep(1.0)  # let every process connect
    t0 = time.time()
    if window is not None:
        window.begin()
    start.set()
    results: list[Any] = []
    while len(results) < len(procs):
        try:
            results.append(out.get(timeout=1))
        except queue.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                raise RuntimeError("a client process failed") from None
    if window is not None:
        window.end()
    for p in procs:
        p.join(10)
    return [t0, *results]


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=16, help="client threads per process")
    ap.add_argument("--seconds", type=float, default=4.0, help="per shard phase")
    ap.add_argument("--rpc-workers", type=int, default=16, help="master RPC threads (threads)")
    ap.add_argument(
        "--rpc-server",
        choices=RPC_SERVERS,
        default=MasterConfig().rpc.server,
        help="the master's gRPC server (MasterConfig.rpc.server)",
    )
    ap.add_argument(
        "--no-fsync",
        action="store_true",
        help="MasterConfig.persistence.fsync off (the default before issue 34): journal writes end "
        "in the page cache, not on disk",
    )
    ap.add_argument("--leases", default="1,8", help="lease sizes to measure (comma-separated)")
    ap.add_argument(
        "--paced-rate",
        default="1250,2000,2500",
        help="total shards/s of the paced runs, comma-separated (each shard: 2 requests; "
        "2500: the goal's 5,000 shard requests/s)",
    )
    ap.add_argument(
        "--batched",
        action="store_true",
        help="also batched-K (K: the last lease size): each call reports the shards of the "
        "call before (held back; the trainer does not) and leases K",
    )
    ap.add_argument(
        "--pin",
        default=",".join(LAYOUTS),
        help="layouts to run, comma-separated: off (anywhere), master (the master on one CPU, "
        "MasterConfig.cpu; clients anywhere), split (the master on one CPU, clients on the "
        "others)",
    )
    ap.add_argument("--save-rows", default="", help="write this run's rows (JSON) to this file")
    ap.add_argument(
        "--baseline",
        default="",
        help="a --save-rows file: print this run's rates and CPU per shard as ratios to its",
    )
    ap.add_argument("--label", default="", help="this run's name in --save-rows / --baseline")
    return ap.parse_args()


def _config(args: argparse.Namespace, job_dir: Path, cpu: int | None = None) -> MasterConfig:
    return MasterConfig(
        job_name="bench",
        job_dir=str(job_dir),
        datasets=(Dataset(size=5_000_000, shard_size=10),),
        host_store=False,
        cpu=cpu,
        rendezvous=RendezvousConfig(
            min_nodes=args.agents, max_nodes=args.agents, last_call_timeout=60.0
        ),
        node_health=NodeHealthConfig(heartbeat_timeout=600.0),
        rpc=RpcConfig(server=args.rpc_server, workers=args.rpc_workers),
        persistence=PersistenceConfig(fsync=not args.no_fsync),
    )


def _rendezvous_s(args: argparse.Namespace, tmp: Path) -> float:
    master = spawn_master(_config(args, tmp / "rendezvous"))
    try:
        nodes = [f"agent-{i}" for i in range(args.agents)]
        per = [(master.address, nodes[p :: args.procs], args.threads) for p in range(args.procs)]
        t0, *ends = _run_procs(_rendezvous_worker, per)
        return float(max(ends) - t0)
    finally:
        master.stop()


def _shard_rows(
    args: argparse.Namespace, tmp: Path, phases: list[tuple[str, str, float]], cpus: Cpus
) -> list[Row]:
    rows = []
    for name, mode, interval in phases:
        # A fresh master per phase: what one phase leaves (the get_shard phase's shards are
        # never reported) does not weigh on the next.
        job_dir = Path(tempfile.mkdtemp(dir=tmp))
        master = spawn_master(_config(args, job_dir, cpus.server))
        try:
            per_s = [
                (master.address, f"p{p}", args.threads, args.seconds, mode, interval)
                for p in range(args.procs)
            ]
            before, clients_before = process_cpu_s(master.process.pid), children_cpu_s()
            window = CpuWindow(master.process.pid, cpus.server)
            _, *lats = _run_procs(_shard_worker, per_s, cpus.clients, window)
            cpu = process_cpu_s(master.process.pid) - before
            # the client processes: the only children that ended meanwhile (the master runs on)
            clients = children_cpu_s() - clients_before
            # pinned: only the master's CPU (the clients too unless split); else all CPUs
            mine = window.used + (clients if cpus.server is None else 0.0)
            others = max(0.0, window.busy - mine) / window.wall
            inside = _inside_p99_ms(job_dir)
        finally:
            master.stop()
        flat = sorted(x for lat in lats for x in lat)
        per_shard = 1 if mode == "get" else 2  # a get and its report: two requests
        rate = len(flat) * per_shard / args.seconds
        p50, p99, cpu_per = pct_ms(flat, 50), p99_ms(flat), cpu / max(1, len(flat))
        clients_cpu = clients / args.seconds
        rows.append(Row(name, rate, p50, p99, inside, cpu_per, interval, clients_cpu, others))
    return rows


def main() -> int:
    args = _args()
    load = os.getloadavg()
    leases = [int(k) for k in args.leases.split(",") if k]
    paced_rates = [float(r) for r in args.paced_rate.split(",") if r and float(r)]
    clients = args.procs * args.threads
    # (name, mode, seconds between one thread's shards; 0: back to back)
    phases = [("get_shard", "get", 0.0), ("pairs", "pairs", 0.0)]
    phases += [(f"lease-{k}", f"lease-{k}", 0.0) for k in leases]
    k = leases[-1] if leases else 1
    phases.append((f"lease-{k} unary", f"unary lease-{k}", 0.0))
    if args.batched:
        phases.append((f"batched-{k}", f"batched-{k}", 0.0))
    for r in paced_rates:
        phases.append((f"paced lease-{k} @{r:,.0f}/s", f"lease-{k}", clients / r))
        phases.append((f"  unary @{r:,.0f}/s", f"unary lease-{k}", clients / r))
    paced = [clients / r for r in paced_rates]
    layouts = [x for x in args.pin.split(",") if x]
    if bad := [x for x in layouts if x not in LAYOUTS]:
        raise SystemExit(f"--pin: {bad} not among {LAYOUTS}")
    if len(os.sched_getaffinity(0)) < 2 and "split" in layouts:
        print("one CPU usable here: no split layout\n")
        layouts.remove("split")
    header = ["workload", "callers", f"flexjob ({args.rpc_server})", "goal", "bare gRPC"]
    header += ["vs bare", "bare aio", "vs aio", "vs pairs"]
    label = args.label or ("fsync off" if args.no_fsync else "fsync on")
    saved = json.loads(Path(args.baseline).read_text()) if args.baseline else None
    measured: dict[str, list[Row]] = {}
    with tempfile.TemporaryDirectory(prefix="flexjob-bench-") as tmp:
        rdzv_s = _rendezvous_s(args, Path(tmp))
        print(f"rendezvous completion of {args.agents} agents: {rdzv_s:.2f} s (goal < 2.00)\n")
        for name in layouts:
            where = Cpus.layout(name)
            rows = _shard_rows(args, Path(tmp), phases, where)
            bares = [
                _bare_grpc(
                    args.procs, args.threads, args.seconds, args.rpc_workers, paced, aio, where
                )
                for aio in (False, True)
            ]
            print(where.describe())
            print_table([header, *rows_table(args, rows, bares, where)])
            print()
            measured[name] = rows
            if saved is not None:
                print(f"against the baseline {args.baseline} ({where.describe()}):")
                print_table(baseline_table(label, rows, saved, name))
                print()
    if args.save_rows:
        Path(args.save_rows).write_text(json.dumps(rows_json(label, measured)))
    print(
        f"bare gRPC (a thread pool of {args.rpc_workers}) and bare aio (grpc.aio, one event "
        f"loop): one constant reply per call from {args.procs}x{args.threads} clients; p99 "
        "back to back (unpaced rows) and paced at each paced row's rate; their CPU per call "
        f"back to back. callers: calls in flight at most ({args.procs} processes x "
        f"{args.threads} threads, one call each); back to back they queue (Little's law: "
        "mean latency = callers / calls per s). Paced rows: @ total shards/s offered (each "
        "shard 2 requests; @2,500/s is the goal's 5,000 shard requests/s). Client "
        "processes' CPU: CPU-seconds a second of all client processes together; busy besides "
        "the master: what else ran on the master's CPU meanwhile (other jobs of a shared "
        "machine: the master waits for it; unpinned: all CPUs, less the master and clients). "
        "p99 inside the master: its own time per call, request received to reply returned "
        "(flexjob_master_rpc_seconds, all calls; the bound of its histogram bucket); the rest "
        "of a caller's p99 is gRPC's queues, the transport and the clients. Load "
        f"average (1 min) at the start {load[0]:.2f}, at the end {os.getloadavg()[0]:.2f} on "
        f"{os.cpu_count()} CPUs: latency on a shared machine follows it."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
