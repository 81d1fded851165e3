"""A small elastic job for the straggler tests: one node can be made slow, every committed
step's samples are logged.

``STRAGGLE_NODE=<node id>``: that node's trainer sleeps ``STRAGGLE_SLEEP`` seconds (default
0.3) in every step before its forward pass, as a slow GPU or data loader would. After each
committed step (``ElasticTrainer.on_step``) the rank appends ``epoch idx,idx,...`` to
``$SAMPLES_DIR/<node>.<pid>.samples`` in one write. ``PREFLIGHT_FAIL_NODE=<node id>``: that node's
pre-flight check raises (with ``flexjob run --preflight``), as a broken device would.
Arguments: ``--size N`` samples, batch 4.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch

from flexjob.trainer import ElasticSampler, ElasticTrainer, preflight
from flexjob.trainer.batch import Step

BATCH = 4


def broken_check() -> None:
    raise RuntimeError("device error (injected by the test)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--size", type=int, default=720)
    a = p.parse_args()
    log_dir = Path(os.environ["SAMPLES_DIR"])
    log_dir.mkdir(parents=True, exist_ok=True)
    node = os.environ.get("FLEXJOB_NODE_ID")
    path = log_dir / f"{node}.{os.getpid()}.samples"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    slow = os.environ.get("STRAGGLE_NODE") == node
    if os.environ.get("PREFLIGHT_FAIL_NODE") == node:
        preflight.local_check = broken_check
    sleep_s = float(os.environ.get("STRAGGLE_SLEEP", "0.3")) if slow else 0.0

    torch.manual_seed(0)
    x = torch.randn(a.size, 16)
    y = x.sum(1, keepdim=True)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    sampler = ElasticSampler(batch_size=BATCH, size=a.size, shard_size=BATCH, epochs=1)
    trainer = ElasticTrainer(model, optimizer, sampler, checkpoint=False)

    def committed(step: Step) -> None:
        if step.indices:
            os.write(fd, f"{step.epoch} {','.join(map(str, step.indices))}\n".encode())

    trainer.on_step(committed)
    with trainer:
        for step in trainer.steps():
            with trainer.step():
                time.sleep(sleep_s)
                idx = torch.tensor(step.indices, dtype=torch.int64)
                loss = torch.nn.functional.mse_loss(trainer.model(x[idx]), y[idx])
                loss.backward()
                optimizer.step()
    print(f"slow_node: done steps={trainer.step_count}", flush=True)


if __name__ == "__main__":
    main()
