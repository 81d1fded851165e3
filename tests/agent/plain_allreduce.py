"""A plain torch script (no flexjob imports): env:// rendezvous, one all-reduce. An argument N
makes the last rank stay N seconds after it (so other nodes finish first); a second argument
names the node (``FLEXJOB_NODE_ID``) that stays instead."""

import os
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
print(f"sum={t.item():.0f} world={dist.get_world_size()} rank={dist.get_rank()}", flush=True)
if len(sys.argv) > 2:
    stays = os.environ.get("FLEXJOB_NODE_ID") == sys.argv[2]
else:
    stays = dist.get_rank() == dist.get_world_size() - 1
dist.destroy_process_group()
if len(sys.argv) > 1 and stays:
    time.sleep(float(sys.argv[1]))
