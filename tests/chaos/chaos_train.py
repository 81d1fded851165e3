"""The chaos suite's training script: the digits example, logging every sample it trains.

Before each step's backward pass the ranks exchange their batches; after it (the gradient
all-reduce is done: every rank's samples are in the update) each rank appends the *whole*
step, one ``epoch round:step idx,idx,...`` line per rank's batch, to
``$CHAOS_LOG_DIR/<pid>.samples`` in one ``write``, before the step is committed. So a step is
logged once any rank finished its all-reduce, also when the rank whose samples they are was
killed inside it (after its gradients went out); the checker counts a sample once per distinct
``round:step``, and a sample trained in two steps is a duplicate. Rank 0 prints the test
accuracy at the end.

Knobs (environment): ``CHAOS_DIE_AFTER_STEP=N``: node ``worker-1``'s trainer SIGKILLs itself
right after logging step N (its all-reduce done, its shard not reported yet), once per log
directory; ``CHAOS_FINAL_EPOCH_LR``: the learning rate of the last epoch (a lower one makes the
final accuracy depend less on the order faults left the last samples in).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from digits_ddp import load_data, make_model

from flexjob.trainer import ElasticSampler, ElasticTrainer, world_info

BATCH = 32
DIE_AFTER_STEP = "CHAOS_DIE_AFTER_STEP"
FINAL_EPOCH_LR = "CHAOS_FINAL_EPOCH_LR"


def die_now(log_dir: Path, step: int) -> bool:
    """``CHAOS_DIE_AFTER_STEP`` asks this process to die after ``step`` (once per log dir)."""
    wanted = os.environ.get(DIE_AFTER_STEP)
    if wanted is None or int(wanted) != step or os.environ.get("FLEXJOB_NODE_ID") != "worker-1":
        return False
    try:
        (log_dir / "died-after-step").open("x").close()
    except FileExistsError:
        return False
    return True


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--step-delay", type=float, default=0.02, help="Seconds of data loading.")
    a = p.parse_args()
    log_dir = Path(os.environ["CHAOS_LOG_DIR"])
    log_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(log_dir / f"{os.getpid()}.samples", os.O_WRONLY | os.O_APPEND | os.O_CREAT)

    torch.manual_seed(0)
    x_tr, y_tr, x_te, y_te = load_data(0)
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sampler = ElasticSampler(batch_size=BATCH, size=len(x_tr), shard_size=BATCH, epochs=a.epochs)
    trainer = ElasticTrainer(model, optimizer, sampler, checkpoint_every=10)
    final_lr = os.environ.get(FINAL_EPOCH_LR)
    with trainer:
        for step in trainer.steps():
            if final_lr and step.epoch == a.epochs - 1:
                for group in optimizer.param_groups:
                    group["lr"] = float(final_lr)
            with trainer.step():
                time.sleep(a.step_delay)  # "loading" the batch: before the forward pass
                idx = torch.tensor(step.indices, dtype=torch.int64)
                out = trainer.model(x_tr[idx])
                loss = F.cross_entropy(out, y_tr[idx], reduction="sum") * step.loss_scale
                everyone: list[tuple[int, list[int]] | None] = [None] * dist.get_world_size()
                dist.all_gather_object(everyone, (step.epoch, list(step.indices)))
                loss.backward()
                key = f"{trainer.round}:{step.number}"
                lines = [
                    f"{epoch} {key} {','.join(map(str, indices))}\n"
                    for epoch, indices in filter(None, everyone)
                    if indices
                ]
                os.write(fd, "".join(lines).encode())
                if step.indices and die_now(log_dir, step.number):
                    os.kill(os.getpid(), signal.SIGKILL)  # after the all-reduce, unreported
                optimizer.step()
        info = world_info()
    if info.rank == 0:
        with torch.no_grad():
            acc = (model(x_te).argmax(1) == y_te).float().mean().item()
        print(f"digits: accuracy={acc:.4f} steps={trainer.step_count}", flush=True)


if __name__ == "__main__":
    main()
