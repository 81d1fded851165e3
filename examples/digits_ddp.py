"""Elastic DDP training of a small MLP on scikit-learn's digits (shipped with sklearn, no download).

Run with ``flexjob run --nnodes 2 examples/digits_ddp.py``. Each step takes a micro-batch of
sample indices from the master's shards (``ElasticSampler``); ``ElasticTrainer`` keeps training
when workers die or join, re-forming the gloo group in place; rank 0 checkpoints every few
steps and prints the test accuracy and the final training loss at the end. With a fixed global
batch (the job's ``spec.batch``; ``--batch-size`` is then its micro-batch size) each step runs
this rank's planned micro-batches (``trainer.micro_steps``) before the all-reduce.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from flexjob.trainer import ElasticSampler, ElasticTrainer, world_info


def load_data(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=seed)
    return x_tr, y_tr, x_te, y_te


def make_model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-dir", default=os.environ.get("DIGITS_CHECKPOINT_DIR"))
    p.add_argument("--checkpoint-every", type=int, default=20)
    p.add_argument("--step-delay", type=float, default=0.0, help="Seconds of extra work a step.")
    a = p.parse_args()

    torch.manual_seed(a.seed)
    x_tr, y_tr, x_te, y_te = load_data(a.seed)
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    sampler = ElasticSampler(
        batch_size=a.batch_size, size=len(x_tr), shard_size=a.batch_size, epochs=a.epochs
    )
    trainer = ElasticTrainer(
        model,
        optimizer,
        sampler,
        checkpoint_dir=a.checkpoint_dir,
        checkpoint_every=a.checkpoint_every,
    )
    with trainer:
        for step in trainer.steps():
            with trainer.step():
                if a.step_delay:
                    # The extra work comes before the gradient all-reduce, like real compute:
                    # a worker killed in it leaves its step undone everywhere (retried in the
                    # next world), not done but unreported.
                    time.sleep(a.step_delay)
                for micro in trainer.micro_steps(step):
                    idx = torch.tensor(micro.indices, dtype=torch.int64)
                    out = trainer.model(x_tr[idx])
                    loss = F.cross_entropy(out, y_tr[idx], reduction="sum") * micro.loss_scale
                    loss.backward()
                optimizer.step()
                trainer.report_loss(loss.item() / max(len(step.indices), 1))
        info = world_info()
        steps, reforms = trainer.step_count, trainer.reforms
        plan = trainer.batch_plan
        batch = f" global_batch={plan.global_batch_size}" if plan else ""
        lr = optimizer.param_groups[0]["lr"]
    if info.rank == 0:
        with torch.no_grad():
            acc = (model(x_te).argmax(1) == y_te).float().mean().item()
            train_loss = F.cross_entropy(model(x_tr), y_tr).item()
        print(
            f"digits: accuracy={acc:.4f} steps={steps} world_size={info.world_size} "
            f"reforms={reforms} loss={train_loss:.6f}{batch} lr={lr:.6g}",
            flush=True,
        )


if __name__ == "__main__":
    main()
