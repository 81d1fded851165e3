"""The training script of ``benchmarks/recovery.py``: the same file under torchrun and flexjob.

Under ``flexjob run`` / ``flexjob agent`` (``FLEXJOB_MASTER`` set) it uses the trainer helpers
and survives world changes in place; under torchrun it is a plain DDP script that resumes from
a checkpoint after each restart. Every step appends ``time node pid round world step`` to
``$BENCH_DIR/<pid>.log``. Runs until ``$BENCH_DIR/stop`` exists, or (``$BENCH_MAX_STEPS`` > 0)
until that many steps are done.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

BENCH_DIR = Path(os.environ.get("BENCH_DIR", "."))
NODE = os.environ.get("FLEXJOB_NODE_ID") or os.environ.get("BENCH_NODE", "?")
STEP_S = float(os.environ.get("BENCH_STEP_S", "0.02"))
MAX_STEPS = int(os.environ.get("BENCH_MAX_STEPS", "0"))
#: Intra-op threads per process (``$BENCH_THREADS``, default 1): three processes of torch's
#: default (one thread per core) on a 2-core machine spend a step in OpenMP barriers, and
#: the step's length then measures the machine's load, not the recovery.
torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "1")))
N = 4096
torch.manual_seed(0)
X = torch.randn(N, 64)
Y = (X[:, :10].argmax(1)).long()


def model_and_opt() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


class StepLog:
    def __init__(self) -> None:
        self.f = (BENCH_DIR / f"{os.getpid()}.log").open("a", buffering=1)

        self.steps = 0

    def step(self, round_: int, world: int, step: int) -> None:
        self.f.write(f"{time.time():.4f} {NODE} {os.getpid()} {round_} {world} {step}\n")
        self.steps += 1

    def done(self) -> bool:
        return 0 < MAX_STEPS <= self.steps or stopped()


def stopped() -> bool:
    return (BENCH_DIR / "stop").exists()


def run_flexjob() -> None:
    from flexjob.trainer import ElasticSampler, ElasticTrainer

    model, opt = model_and_opt()
    sampler = ElasticSampler(batch_size=32, size=N, shard_size=32, epochs=1000)
    log = StepLog()
    with ElasticTrainer(model, opt, sampler) as t:
        for s in t.steps():
            with t.step():
                idx = torch.tensor(s.indices, dtype=torch.int64)
                loss = F.cross_entropy(t.model(X[idx]), Y[idx], reduction="sum") * s.loss_scale
                loss.backward()
                opt.step()
                time.sleep(STEP_S)
            log.step(t.round, s.world_size, t.step_count)
            if log.done():
                break


def run_torchrun() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model, opt = model_and_opt()
    ckpt = BENCH_DIR / "torchrun.pt"
    step = 0
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=True)
        model.load_state_dict(state["model"])
        step = int(state["step"])
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    log = StepLog()
    gen = torch.Generator().manual_seed(rank + 1000 * restart)
    while not log.done():
        idx = torch.randint(0, N, (32,), generator=gen)
        loss = F.cross_entropy(ddp(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(STEP_S)
        step += 1
        log.step(restart, world, step)
        if rank == 0 and step % 20 == 0:
            tmp = ckpt.with_suffix(".tmp")
            torch.save({"model": model.state_dict(), "step": step}, tmp)
            os.replace(tmp, ckpt)
    dist.destroy_process_group()


if __name__ == "__main__":
    run_flexjob() if os.environ.get("FLEXJOB_MASTER") else run_torchrun()
