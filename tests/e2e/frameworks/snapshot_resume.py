"""The elastic pattern torch's own DDP tutorial teaches (multinode.py): load the snapshot if
there is one, train, save a snapshot every epoch from rank 0; started by torchrun — or by
flexjob — with ``RANK``/``WORLD_SIZE``/``LOCAL_RANK`` and ``init_process_group("gloo")``.

``--snapshot PATH`` is the snapshot file; ``--fail-at-epoch E`` makes rank 1 exit with 1 at
epoch E of the first attempt (``TORCHELASTIC_RESTART_COUNT`` 0), so its restart must resume
from the snapshot. Prints ``snapshot: rank=R resumed_from=E restart=N`` at the start and
``snapshot: rank=R done epochs=E`` at the end.
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--fail-at-epoch", type=int, default=-1)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = torch.nn.Linear(4, 1)
    first_epoch = 0
    if os.path.exists(args.snapshot):
        snapshot = torch.load(args.snapshot)
        model.load_state_dict(snapshot["MODEL_STATE"])
        first_epoch = snapshot["EPOCHS_RUN"]
    restart = os.environ["TORCHELASTIC_RESTART_COUNT"]
    print(f"snapshot: rank={rank} resumed_from={first_epoch} restart={restart}", flush=True)
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(rank)
    for epoch in range(first_epoch, args.epochs):
        if rank == 1 and epoch == args.fail_at_epoch and restart == "0":
            print(f"snapshot: rank=1 fails at epoch {epoch}", flush=True)
            sys.exit(1)
        for _ in range(4):
            x = torch.randn(8, 4, generator=gen)
            loss = ddp(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            torch.save({"MODEL_STATE": model.state_dict(), "EPOCHS_RUN": epoch + 1}, args.snapshot)
        dist.barrier()  # the snapshot of this epoch is written before anyone goes on
    print(f"snapshot: rank={rank} done epochs={args.epochs}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
