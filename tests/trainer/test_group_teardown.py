"""Tearing a group down right after a collective, then dropping the DDP model that holds it,
never deadlocks (gloo's destructor joins its workers under the GIL; a worker may still need
the GIL to let go of the collective's tensors). Each round runs in a child process: a deadlock
shows as a child that does not finish."""

import subprocess
import sys

ROUNDS = 150

CHILD = f"""
import torch
import torch.distributed as dist
from flexjob.platform.ports import free_port
from flexjob.trainer import group

for _ in range({ROUNDS}):
    address = f"tcp://127.0.0.1:{{free_port()}}"
    dist.init_process_group("gloo", init_method=address, rank=0, world_size=1)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2), init_sync=False)
    ids = [None]
    dist.all_gather_object(ids, "worker-0")
    group.destroy_group()
    del model
print("done")
"""


def test_a_group_torn_down_right_after_a_collective_never_deadlocks() -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=90)
    assert out.returncode == 0 and out.stdout.strip() == "done", out.stderr[-2000:]
