"""A plain torch script (no flexjob imports): env:// rendezvous, one all-reduce."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
print(f"sum={t.item():.0f} world={dist.get_world_size()} rank={dist.get_rank()}", flush=True)
dist.destroy_process_group()
