"""Parameter-server throughput: embedding rows looked up + updated per second through 1, 2
and 4 ``flexjob ps`` replicas on loopback, and CTR training samples/s with 1 and 2 workers.

Rows: each step looks up a batch of 4,096 Zipf-distributed ids (duplicates included, as a
real batch has) of a 16-dim table on the PS set, then pushes one gradient row per id (the PS
sums duplicates and applies SGD). Client processes (``--clients`` per PS) drive the PS
processes; rows/s counts the batch's ids, unique rows/s the distinct ones. Baseline: the same
lookup + update in process on one worker with ``torch.nn.EmbeddingBag`` (sparse gradients, SGD).
CTR: ``examples/ctr`` DeepFM trained through 2 PS by 1 and 2 workers (``flexjob run --ps 2``),
against the same model with an in-process ``torch.nn.EmbeddingBag`` on one worker. Then a
profile of one PS round trip: where the time of a step goes.

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
from pathlib import Path

import numpy as np
import torch

from flexjob.core.ps.optim import OptimizerSpec
from flexjob.core.ps.partition import split_ids
from flexjob.core.ps.store import ModelSpec, PsStore
from flexjob.core.ps.table import TableSpec
from flexjob.trainer.ps_set import PsSet

BATCH, DIM, VOCAB, ZIPF = 4096, 16, 10_000_000, 1.2
ROOT = Path(__file__).resolve().parents[1]
TABLE = TableSpec("bench", DIM, num_rows=VOCAB, init_scale=0.01)
OPT = OptimizerSpec(lr=0.01)


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


def _client(
    addresses: list[str],
    seconds: float,
    seed: int,
    start: "threading.Barrier",
    out: "mp.Queue[tuple[int, int]]",
) -> None:
    ps = PsSet(addresses)
    ps.configure(OPT, [TABLE], {})
    work = batches(seed)
    grads = np.full((BATCH, DIM), 1e-3, dtype=np.float32)
    ids_done = unique_done = 0
    for ids in work[:4]:  # warm up: create the hot rows
        _, split = ps.lookup("bench", ids)
        for call in ps.push_rows("bench", split, grads[: split.unique.size]):
            call.result()
    start.wait()  # every client measures the same window
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline:
        ids = work[i % len(work)]
        _, split = ps.lookup("bench", ids)
        for call in ps.push_rows("bench", split, grads[: split.unique.size]):
            call.result()
        ids_done += ids.size
        unique_done += split.unique.size
        i += 1
    out.put((ids_done, unique_done))
    ps.close()


def ps_rows_per_second(num_ps: int, clients: int, seconds: float) -> tuple[float, float]:
    procs, addresses = start_ps(num_ps)
    ctx = mp.get_context("spawn")
    out: mp.Queue[tuple[int, int]] = ctx.Queue()
    start = ctx.Barrier(clients)
    try:
        workers = [
            ctx.Process(target=_client, args=(addresses, seconds, seed, start, out))
            for seed in range(clients)
        ]
        for w in workers:
            w.start()
        results = [out.get(timeout=seconds + 120) for _ in workers]
        for w in workers:
            w.join()
        ids = sum(r[0] for r in results)
        unique = sum(r[1] for r in results)
        return ids / seconds, unique / seconds
    finally:
        for p in procs:
            p.terminate()
            p.wait()


def embedding_bag_rows_per_second(seconds: float) -> tuple[float, float]:
    """Baseline: in-process ``torch.nn.EmbeddingBag`` lookup + sparse SGD update."""
    torch.set_num_threads(1)
    bag = torch.nn.EmbeddingBag(VOCAB, DIM, mode="sum", sparse=True)
    opt = torch.optim.SGD(bag.parameters(), lr=0.01)
    work = [torch.from_numpy(b) for b in batches(0)]
    uniques = [int(torch.unique(b).numel()) for b in work]  # counted outside the timed loop
    offsets = torch.arange(BATCH)  # one id per bag: a plain lookup of every id
    ids_done = unique_done = 0
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
    return ids_done / seconds, unique_done / seconds


def _best_ms(step: Callable[[int], object], rounds: int = 40, repeats: int = 7) -> float:
    """Milliseconds per call of ``step(i)``: the best of ``repeats`` runs (robust to load)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(rounds):
            step(i)
        best = min(best, (time.perf_counter() - t0) / rounds * 1e3)
    return best


def profile_step() -> list[tuple[str, float]]:
    """Milliseconds per 4,096-id step, split: the client's dedup + split, the PS's own work
    (lookup + update of the rows, no network), and the whole step through 1 PS over gRPC."""
    work = batches(1)
    grads = np.full((BATCH, DIM), 1e-3, dtype=np.float32)
    store = PsStore()
    store.configure(ModelSpec(OPT, (TABLE,), {}))
    table = store.table("bench")
    uniques = [np.unique(ids) for ids in work]
    for u in uniques:
        table.lookup(u)

    def in_process(i: int) -> None:
        u = uniques[i % len(uniques)]
        table.lookup(u)
        table.push(u, grads[: u.size])

    procs, addresses = start_ps(1)
    try:
        ps = PsSet(addresses)
        ps.configure(OPT, [TABLE], {})

        def through_ps(i: int) -> None:
            _, split = ps.lookup("bench", work[i % len(work)])
            for call in ps.push_rows("bench", split, grads[: split.unique.size]):
                call.result()

        for i in range(len(work)):
            through_ps(i)
        t_split = _best_ms(lambda i: split_ids(work[i % len(work)], 1))
        t_store = _best_ms(in_process)
        t_rpc = _best_ms(through_ps)
        ps.close()
    finally:
        for p in procs:
            p.terminate()
            p.wait()
    return [
        ("client dedup + split by PS", t_split),
        ("PS work: lookup + update rows (in process)", t_store),
        ("gRPC + protobuf + threads (the rest)", t_rpc - t_split - t_store),
        ("whole step through 1 PS", t_rpc),
    ]


def ctr_samples_per_second(workers: int, train_size: int) -> float:
    """Aggregate samples/s of the CTR example through 2 PS with ``workers`` workers."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "flexjob", "run", "--ps", "2", "--nnodes", str(workers)]
        command += ["--no-progress", "--job-dir", tmp, str(ROOT / "examples/ctr/train.py")]
        command += ["--train-size", str(train_size), "--epochs", "1", "--test-size", "2000"]
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
    base_ids, base_unique = embedding_bag_rows_per_second(args.seconds)
    one_ps = 0.0
    for n in args.ps:
        ids, unique = ps_rows_per_second(n, args.clients * n, args.seconds)
        one_ps = ids if n == 1 else one_ps
        added = (
            f", +{(ids - one_ps) / one_ps / (n - 1):.2f}x 1 PS/added" if n > 1 and one_ps else ""
        )
        row(
            f"rows/s lookup+update, {n} PS, {args.clients * n} clients{added}",
            f"{ids:,.0f} ({unique:,.0f} uniq)",
            f"{base_ids:,.0f} ({base_unique:,.0f} uniq)",
            f"{ids / base_ids:.2f}",
        )
    if not args.skip_ctr:
        local = ctr_local_samples_per_second(args.ctr_train_size)
        for workers in (1, 2):
            rate = ctr_samples_per_second(workers, args.ctr_train_size)
            row(
                f"CTR DeepFM samples/s, 2 PS, {workers} worker(s)",
                f"{rate:,.0f}",
                f"{local:,.0f}",
                f"{rate / local:.2f}",
            )
    print("\nwhere one 4,096-id step's time goes (1 PS, 1 client):")
    for what, ms in profile_step():
        print(f"  {what:<45} {ms:7.2f} ms")


if __name__ == "__main__":
    main()
