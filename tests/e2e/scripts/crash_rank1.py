"""Rank 1 raises after the world forms (appending the time to $CRASH_FILE); rank 0 waits in an
all-reduce for it, as a real job's other ranks would."""

import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 1:
    with open(os.environ["CRASH_FILE"], "a") as f:
        f.write(f"{time.time()}\n")
    raise RuntimeError("boom from rank 1")
dist.all_reduce(torch.ones(1))
time.sleep(120)
