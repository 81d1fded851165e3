"""Parameter-server accuracy with several workers: what ``PsEmbedding(defer_push=True)`` costs.

The CTR example's DeepFM is trained through 2 in-process PS servers (real gRPC on loopback)
by workers that take turns step by step in one process (the step order is fixed; pushes still
run asynchronously, so runs differ in the third decimal), with ``defer_push`` on and off; a
second worker starts at step 0 or half-way. Each row prints the held-out AUC and its ratio to
the baseline: the same model trained by one worker (defer_push off). With ``defer_push`` a
worker's row gradients reach the PS with its next lookup, so the other worker computes its
step on rows without them: one step of staleness that a single worker never has. ~1 minute
on 2 cores.

    PYTHONPATH=. python benchmarks/ps_async_accuracy.py [--train-size 200000] [--steps 195]
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec
from flexjob.ps.service import PsService
from flexjob.rpc.ps_server import serve_ps
from flexjob.trainer.ps_set import PsSet
from flexjob.trainer.ps_torch import PsSync

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "ctr"))
import ctr_data
from deepfm import DeepFM
from train import evaluate

BATCH, SHARD_BATCHES, NUM_PS = 1024, 8, 2


def _worker(addresses: list[str], defer_push: bool) -> tuple[DeepFM, PsSync]:
    torch.manual_seed(0)
    model = DeepFM(
        PsSet(addresses), len(ctr_data.VOCABS), ctr_data.TOTAL_VOCAB, defer_push=defer_push
    )
    sync = PsSync(model.features.ps, model, OptimizerSpec(OptimizerKind.ADAM, lr=0.01))
    sync.configure()
    return model, sync


def train_auc(
    train: ctr_data.CtrData, test: ctr_data.CtrData, steps: int, join: int | None, defer: bool
) -> float:
    """Held-out AUC after ``steps`` batches; a second worker starts at step ``join`` (None:
    never) and from then on the two take turns."""
    servers = [serve_ps(PsService(i, NUM_PS), "127.0.0.1", 0) for i in range(NUM_PS)]
    addresses = [s.address for s in servers]
    loss_fn = torch.nn.BCEWithLogitsLoss()
    try:
        workers = [_worker(addresses, defer)]
        for i in range(steps):
            if i == join:
                workers.append(_worker(addresses, defer))
            model, sync = workers[i % len(workers)]
            idx = np.arange(i * BATCH, (i + 1) * BATCH) % len(train)
            loss = loss_fn(
                model(torch.from_numpy(train.ids[idx])), torch.from_numpy(train.labels[idx])
            )
            loss.backward()
            sync.step(final=i % SHARD_BATCHES == SHARD_BATCHES - 1)
        for _, sync in workers:
            sync.finish()
        model, sync = workers[0]
        sync.pull(everything=True)
        return evaluate(model, test)
    finally:
        for s in servers:
            s.stop(grace=None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--train-size", type=int, default=200_000)
    ap.add_argument("--test-size", type=int, default=20_000)
    ap.add_argument("--steps", type=int, default=195)
    args = ap.parse_args()
    torch.set_num_threads(1)
    train, test = ctr_data.splits(args.train_size, args.test_size, 0)
    base = train_auc(train, test, args.steps, None, defer=False)
    print(f"{'run':<50} {'AUC':>7} {'vs 1 worker':>12}")
    print(f"{'1 worker (baseline)':<50} {base:>7.4f} {1.0:>12.3f}")
    half = args.steps // 2
    runs = (
        ("1 worker, defer_push on", None, True),
        ("2 workers from step 0, defer_push off", 0, False),
        ("2 workers from step 0, defer_push on", 0, True),
        ("2 workers, the 2nd from half-way, defer_push off", half, False),
        ("2 workers, the 2nd from half-way, defer_push on", half, True),
    )
    for label, join, defer in runs:
        auc = train_auc(train, test, args.steps, join, defer)
        print(f"{label:<50} {auc:>7.4f} {auc / base:>12.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
