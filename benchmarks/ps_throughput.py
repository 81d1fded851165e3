"""Parameter-server throughput: embedding rows looked up + updated per second through 1, 2
and 4 ``flexjob ps`` replicas on loopback, and CTR training samples/s with 1 and 2 workers.

Rows: each step looks up a batch of 4,096 Zipf-distributed ids (duplicates included, as a
real batch has) of a 16-dim table on the PS set and pushes one gradient row per unique id (the
PS applies SGD). As ``PsEmbedding(defer_push=True)`` does, a step's gradients travel with the
next step's lookup: one ``PushLookup`` call per PS and step (the "2 calls" row: a ``Lookup``
then a ``PushRows``, as without ``defer_push``). Client processes (``--clients`` per PS) drive
the PS processes; rows/s counts the batch's ids, unique rows/s the distinct ones; "per PS
CPU-s" divides rows by the CPU seconds the PS processes used in the window, a measure of PS
efficiency that does not depend on how many cores the machine has. Baseline: the same lookup +
update in process on one worker with ``torch.nn.EmbeddingBag`` (sparse gradients, SGD).
CTR: ``examples/ctr`` DeepFM trained through 2 PS by 1 and 2 workers (``flexjob run --ps 2``;
with and without its ``--defer-push``), against the same model with an in-process
``torch.nn.EmbeddingBag`` on one worker. Then a profile of one PS round trip: where the time
of a step goes.

    PYTHONPATH=. python benchmarks/ps_throughput.py [--seconds 5] [--ps 1 2 4] [--skip-ctr]
"""

import argparse
import multiprocessing as mp
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil
import torch

from flexjob.core.ps.optim import OptimizerSpec
from flexjob.core.ps.parameters import ModelSpec, PsStore
from flexjob.core.ps.partition import split_ids
from flexjob.core.ps.table import TableSpec
from flexjob.rpc.gen import ps_pb2 as pb
from flexjob.rpc.ps_convert import tensor_from_pb, tensor_to_pb
from flexjob.trainer.ps_set import PsSet

BATCH, DIM, VOCAB, ZIPF = 4096, 16, 10_000_000, 1.2
ROOT = Path(__file__).resolve().parents[1]
TABLE = TableSpec("bench", DIM, num_rows=VOCAB, init_scale=0.01)
OPT = OptimizerSpec(lr=0.01)
GRADS = np.full((BATCH, DIM), 1e-3, dtype=np.float32)
Push = tuple[np.ndarray, np.ndarray]


def batches(seed: int, count: int = 64) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [((rng.zipf(ZIPF, BATCH) - 1) % VOCAB).astype(np.int64) for _ in range(count)]


def start_ps(num: int) -> tuple[list[subprocess.Popen[str]], list[str]]:
    procs, addresses = [], []
    for i in range(num):
        p = subprocess.Popen(
            [sys.executable, "-m", "flexjob", "ps", "--index", str(i), "--num-ps", str(num)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line = p.stdout.readline() if p.stdout else ""
        found = re.search(r"serving on (\S+)", line)
        if not found:
            raise RuntimeError(f"PS {i} did not start: {line!r}")
        procs.append(p)
        addresses.append(found.group(1))
    return procs, addresses


def _step(ps: PsSet, ids: np.ndarray, push: Push | None, calls: int) -> Push:
    """One training step's PS traffic for batch ``ids``; the gradients it leaves to push."""
    if calls == 1:
        _, split = ps.lookup("bench", ids, push=push)
    else:
        _, split = ps.lookup("bench", ids)
        for call in ps.push_rows("bench", split, GRADS[: split.unique.size]):
            call.result()
    return split.unique, GRADS[: split.unique.size]


def _client(
    addresses: list[str],
    seconds: float,
    seed: int,
    calls: int,
    start: "threading.Barrier",
    out: "mp.Queue[tuple[int, int, float]]",
) -> None:
    ps = PsSet(addresses)
    ps.configure(OPT, [TABLE], {})
    work = batches(seed)
    push: Push | None = None
    ids_done = unique_done = 0
    for ids in work[:4]:  # warm up: create the hot rows
        push = _step(ps, ids, push, calls)
    start.wait()  # every client measures the same window
    cpu = time.process_time()
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline:
        ids = work[i % len(work)]
        push = _step(ps, ids, push, calls)
        ids_done += ids.size
        unique_done += push[0].size
        i += 1
    out.put((ids_done, unique_done, time.process_time() - cpu))
    ps.close()


@dataclass(frozen=True)
class PsRun:
    ids_per_s: float
    unique_per_s: float
    ps_cpu_s: float  # CPU seconds of every PS process in the window
    client_cpu_s: float

    def per_ps_cpu_s(self, seconds: float) -> float:
        return self.ids_per_s * seconds / self.ps_cpu_s if self.ps_cpu_s else 0.0


def ps_rows_per_second(num_ps: int, clients: int, seconds: float, calls: int = 1) -> PsRun:
    procs, addresses = start_ps(num_ps)
    ctx = mp.get_context("spawn")
    out: mp.Queue[tuple[int, int, float]] = ctx.Queue()
    start = ctx.Barrier(clients + 1)  # and this process, to read the PS's CPU at the start
    watched = [psutil.Process(p.pid) for p in procs]
    try:
        workers = [
            ctx.Process(target=_client, args=(addresses, seconds, seed, calls, start, out))
            for seed in range(clients)
        ]
        for w in workers:
            w.start()
        start.wait(timeout=120)
        cpu0 = sum(sum(p.cpu_times()[:2]) for p in watched)
        results = [out.get(timeout=seconds + 120) for _ in workers]
        cpu1 = sum(sum(p.cpu_times()[:2]) for p in watched)
        for w in workers:
            w.join()
        ids = sum(r[0] for r in results)
        unique = sum(r[1] for r in results)
        client_cpu = sum(r[2] for r in results)
        return PsRun(ids / seconds, unique / seconds, cpu1 - cpu0, client_cpu)
    finally:
        for p in procs:
            p.terminate()
            p.wait()


def embedding_bag_rows_per_second(seconds: float) -> tuple[float, float, float]:
    """Baseline: in-process ``torch.nn.EmbeddingBag`` lookup + sparse SGD update; (rows/s,
    unique rows/s, rows per CPU-s of this process)."""
    torch.set_num_threads(1)
    bag = torch.nn.EmbeddingBag(VOCAB, DIM, mode="sum", sparse=True)
    opt = torch.optim.SGD(bag.parameters(), lr=0.01)
    work = [torch.from_numpy(b) for b in batches(0)]
    uniques = [int(torch.unique(b).numel()) for b in work]  # counted outside the timed loop
    offsets = torch.arange(BATCH)  # one id per bag: a plain lookup of every id
    ids_done = unique_done = 0
    cpu = time.process_time()
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline:
        ids = work[i % len(work)]
        out = bag(ids, offsets)
        out.sum().backward()
        opt.step()
        opt.zero_grad()
        ids_done += ids.numel()
        unique_done += uniques[i % len(work)]
        i += 1
    return ids_done / seconds, unique_done / seconds, ids_done / (time.process_time() - cpu)


def _best_ms(
    step: Callable[[int], object],
    clock: Callable[[], float] = time.process_time,
    rounds: int = 40,
    repeats: int = 7,
) -> float:
    """Milliseconds of ``clock`` per call of ``step(i)``, the best of ``repeats`` runs. The
    default clock is this process's CPU time: on a loaded machine, waiting for a core does
    not count."""
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        for i in range(rounds):
            step(i)
        best = min(best, (clock() - t0) / rounds * 1e3)
    return best


def profile_step() -> list[tuple[str, float, float | None]]:
    """Per 4,096-id step through 1 PS (one ``PushLookup`` call): (part, CPU ms, wall ms). The
    parts: the client's dedup + split, the PS's own work (push + lookup of the rows, in
    process), the messages (protobuf encode + decode of request and answer, both sides), and
    the fixed cost of one gRPC call (an empty ``PushLookup``); the rest is what a loaded call
    adds (the payload through gRPC, thread hand-offs). Calls through the PS count the CPU of
    this process and of the PS process (psutil: 10 ms ticks, so 400 calls per run)."""
    work = batches(1)
    splits = [split_ids(ids, 1) for ids in work]
    store = PsStore()
    store.configure(ModelSpec(OPT, (TABLE,), {}))
    table = store.table("bench")
    for sp in splits:
        table.lookup(sp.unique)

    def in_process(i: int) -> None:
        prev, sp = splits[(i - 1) % len(splits)], splits[i % len(splits)]
        table.push_lookup(prev.unique, GRADS[: prev.unique.size], sp.unique)

    def messages(i: int) -> None:
        prev, sp = splits[(i - 1) % len(splits)], splits[i % len(splits)]
        req = pb.PushLookupRequest(
            table="bench",
            lookup_ids=tensor_to_pb(sp.unique),
            push_ids=tensor_to_pb(prev.unique),
            grads=tensor_to_pb(GRADS[: prev.unique.size]),
        )
        got = pb.PushLookupRequest.FromString(req.SerializeToString())
        for field, dtype in (("lookup_ids", "int64"), ("push_ids", "int64"), ("grads", "float32")):
            tensor_from_pb(getattr(got, field), field, dtype)
        rows = np.zeros((sp.unique.size, DIM), dtype=np.float32)
        answer = pb.PushLookupResponse(rows_updated=prev.unique.size, rows=tensor_to_pb(rows))
        tensor_from_pb(pb.PushLookupResponse.FromString(answer.SerializeToString()).rows, "rows")

    def timed(step: Callable[[int], object]) -> tuple[float, float]:
        return _best_ms(step), _best_ms(step, time.perf_counter)

    t_split = timed(lambda i: split_ids(work[i % len(work)], 1))
    t_store = timed(in_process)
    t_messages = timed(messages)
    procs, addresses = start_ps(1)
    server = psutil.Process(procs[0].pid)

    def both_cpus() -> float:
        return time.process_time() + sum(server.cpu_times()[:2])

    try:
        ps = PsSet(addresses)
        ps.configure(OPT, [TABLE], {})
        pushes: list[Push | None] = [None]
        calls = [1]

        def through_ps(i: int) -> None:
            pushes[0] = _step(ps, work[i % len(work)], pushes[0], calls[0])

        def remote(step: Callable[[int], object]) -> tuple[float, float]:
            cpu = _best_ms(step, both_cpus, rounds=400, repeats=3)
            return cpu, _best_ms(step, time.perf_counter)

        nothing = np.empty(0, dtype=np.int64)
        for i in range(len(work)):
            through_ps(i)
        t_call = remote(lambda i: ps.clients[0].push_lookup_async("bench", nothing).result())
        t_step = remote(through_ps)
        calls[0] = 2
        t_two = remote(through_ps)
        ps.close()
    finally:
        for p in procs:
            p.terminate()
            p.wait()
    rest = t_step[0] - sum(p[0] for p in (t_split, t_store, t_messages, t_call))
    return [
        ("client dedup + split by PS", *t_split),
        ("PS work: push + lookup rows (in process)", *t_store),
        ("protobuf encode + decode, both sides", *t_messages),
        ("one empty gRPC call (fixed cost)", *t_call),
        ("the rest (payload through gRPC, threads)", rest, None),
        ("whole step through 1 PS, 1 call", *t_step),
        ("whole step through 1 PS, 2 calls", *t_two),
    ]


def ctr_samples_per_second(workers: int, train_size: int, defer_push: bool = False) -> float:
    """Aggregate samples/s of the CTR example through 2 PS with ``workers`` workers
    (``defer_push``: its ``--defer-push``, one call per PS and step)."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "flexjob", "run", "--ps", "2", "--nnodes", str(workers)]
        command += ["--no-progress", "--job-dir", tmp, str(ROOT / "examples/ctr/train.py")]
        command += ["--train-size", str(train_size), "--epochs", "1", "--test-size", "2000"]
        command += ["--defer-push"] if defer_push else []
        out = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    rates = [float(x) for x in re.findall(r"samples/s=([0-9.]+)", out.stdout + out.stderr)]
    if len(rates) != workers:
        raise RuntimeError(f"CTR run printed {len(rates)} rates:\n{out.stdout}\n{out.stderr}")
    return sum(rates)


def ctr_local_samples_per_second(train_size: int) -> float:
    """Baseline: the same DeepFM with an in-process ``torch.nn.EmbeddingBag`` on one worker."""
    sys.path.insert(0, str(ROOT / "examples" / "ctr"))
    import ctr_data
    from deepfm import FACTORS

    torch.set_num_threads(1)
    data = ctr_data.generate(train_size, 0)
    fields = len(ctr_data.VOCABS)
    bag = torch.nn.EmbeddingBag(ctr_data.TOTAL_VOCAB, 1 + FACTORS, mode="sum", sparse=True)
    bias = torch.nn.Parameter(torch.zeros(1))
    deep = torch.nn.Sequential(
        torch.nn.Linear(fields * FACTORS, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)
    )
    sparse_opt = torch.optim.SparseAdam(bag.parameters(), lr=0.01)
    dense_opt = torch.optim.Adam([bias, *deep.parameters()], lr=0.01)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    started = time.perf_counter()
    for start in range(0, train_size, 1024):
        ids = torch.from_numpy(data.ids[start : start + 1024])
        flat = ids.reshape(-1)
        rows = bag(flat, torch.arange(flat.numel())).reshape(*ids.shape, 1 + FACTORS)
        v = rows[..., 1:]
        fm = 0.5 * (v.sum(1).pow(2) - v.pow(2).sum(1)).sum(1)
        logit = bias + rows[..., 0].sum(1) + fm + deep(v.flatten(1)).squeeze(-1)
        loss = loss_fn(logit, torch.from_numpy(data.labels[start : start + 1024]))
        sparse_opt.zero_grad()
        dense_opt.zero_grad()
        loss.backward()
        sparse_opt.step()
        dense_opt.step()
    return train_size / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--ps", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--clients", type=int, default=2, help="Client processes per PS.")
    parser.add_argument("--ctr-train-size", type=int, default=100_000)
    parser.add_argument("--skip-ctr", action="store_true")
    args = parser.parse_args()

    print(f"machine: {os.cpu_count()} CPUs; batch {BATCH} ids x {DIM} dims, Zipf a={ZIPF}")
    widths = (62, 30, 44, 6)

    def row(*cells: str) -> None:
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)), flush=True)

    row("workload", "flexjob PS", "baseline: in-process EmbeddingBag, 1 worker", "ratio")
    base_ids, base_unique, base_per_cpu = embedding_bag_rows_per_second(args.seconds)
    base = f"{base_ids:,.0f} ({base_unique:,.0f} uniq)"
    runs: dict[str, PsRun] = {}
    for n in args.ps:
        got = ps_rows_per_second(n, args.clients * n, args.seconds)
        runs[f"{n} PS"] = got
        one = runs.get("1 PS")
        added = (
            f", +{(got.ids_per_s - one.ids_per_s) / one.ids_per_s / (n - 1):.2f}x 1 PS/added"
            if n > 1 and one
            else ""
        )
        row(
            f"rows/s lookup+update, {n} PS, {args.clients * n} clients{added}",
            f"{got.ids_per_s:,.0f} ({got.unique_per_s:,.0f} uniq)",
            base,
            f"{got.ids_per_s / base_ids:.2f}",
        )
    if 1 in args.ps:
        got = ps_rows_per_second(1, args.clients, args.seconds, calls=2)
        runs["1 PS, 2 calls"] = got
        row(
            f"rows/s lookup+update, 1 PS, {args.clients} clients, 2 calls",
            f"{got.ids_per_s:,.0f} ({got.unique_per_s:,.0f} uniq)",
            base,
            f"{got.ids_per_s / base_ids:.2f}",
        )
    print(
        "\nCPU in the measured window (rows: the batch's ids; a machine shared with other "
        "work gives these processes less than its cores, so rows per CPU-s compare fairly):"
    )
    print(f"  {'baseline':<15} EmbeddingBag: {base_per_cpu:,.0f} rows per CPU-s")
    for what, got in runs.items():
        per_cpu = got.ids_per_s * args.seconds / (got.ps_cpu_s + got.client_cpu_s)
        print(
            f"  {what:<15} PS {got.ps_cpu_s / args.seconds:4.2f} cores, "
            f"clients {got.client_cpu_s / args.seconds:4.2f} cores; "
            f"{got.per_ps_cpu_s(args.seconds):,.0f} rows per PS CPU-s, "
            f"{per_cpu:,.0f} rows per CPU-s of PS + clients ({per_cpu / base_per_cpu:.2f}x "
            "baseline)"
        )
    if not args.skip_ctr:
        local = ctr_local_samples_per_second(args.ctr_train_size)
        for workers, defer in ((1, False), (2, False), (1, True), (2, True)):
            rate = ctr_samples_per_second(workers, args.ctr_train_size, defer)
            row(
                f"CTR DeepFM samples/s, 2 PS, {workers} worker(s)"
                + (", --defer-push" if defer else ""),
                f"{rate:,.0f}",
                f"{local:,.0f}",
                f"{rate / local:.2f}",
            )
    print(
        "\nwhere one 4,096-id step's time goes (1 PS, 1 client; best of several runs; CPU: "
        "client + PS processes, wall: includes waiting for a core on a loaded machine):"
    )
    print(f"  {'part':<45} {'CPU ms':>8} {'wall ms':>8}")
    for what, cpu, wall in profile_step():
        print(f"  {what:<45} {cpu:8.3f} {'' if wall is None else f'{wall:8.3f}':>8}")


if __name__ == "__main__":
    main()
