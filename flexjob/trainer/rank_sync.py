"""Bringing every rank of a freshly formed world to the same training state.

The rank that has committed the most steps (the oldest survivor; ties go to the lowest rank)
broadcasts its model tensors (from the memory they are in: a GPU's under nccl), optimizer
state and step count. A newcomer or a restarted
process therefore continues from the survivors' memory, not from a checkpoint on disk.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.distributed as dist

from flexjob.trainer.device import collective_device

#: Tensors of one dtype are broadcast together, in flat buckets of at most this many bytes
#: (one collective each instead of one per tensor; a tensor this big or bigger goes alone).
BUCKET_BYTES = 16 << 20


def choose_source(steps: list[int]) -> int:
    """The rank to copy state from: most steps committed, lowest rank among equals."""
    best = max(steps)
    return steps.index(best)


def sync_state(
    module: torch.nn.Module, optimizer: torch.optim.Optimizer | None, step: int, extra: Any = None
) -> tuple[int, Any]:
    """Copy state from the most advanced rank; returns (step, extra) of that rank."""
    world = dist.get_world_size()
    if world == 1:
        return step, extra
    rank = dist.get_rank()
    steps = torch.zeros(world, dtype=torch.int64, device=collective_device())
    steps[rank] = step
    dist.all_reduce(steps)
    src = choose_source([int(s) for s in steps.tolist()])
    with torch.no_grad():
        broadcast_tensors(list(module.state_dict().values()), src)
    payload: list[Any] = [
        (optimizer.state_dict() if optimizer is not None else None, step, extra)
        if rank == src
        else None
    ]
    dist.broadcast_object_list(payload, src)
    opt_state, src_step, src_extra = payload[0]
    if optimizer is not None and rank != src and opt_state is not None:
        optimizer.load_state_dict(opt_state)
    return int(src_step), src_extra


def _buckets(tensors: Sequence[torch.Tensor]) -> Iterator[list[torch.Tensor]]:
    """``tensors`` in order, cut into runs of one dtype and at most ``BUCKET_BYTES``."""
    bucket: list[torch.Tensor] = []
    size = 0
    for t in tensors:
        nbytes = t.numel() * t.element_size()
        if bucket and (t.dtype != bucket[0].dtype or size + nbytes > BUCKET_BYTES):
            yield bucket
            bucket, size = [], 0
        bucket.append(t)
        size += nbytes
    if bucket:
        yield bucket


def broadcast_tensors(tensors: Sequence[torch.Tensor], src: int) -> None:
    """Overwrite ``tensors`` in place with rank ``src``'s (same shapes and order on every
    rank), a bucket of several tensors per collective."""
    for bucket in _buckets(tensors):
        if len(bucket) == 1:
            dist.broadcast(bucket[0], src)
            continue
        flat = torch.cat([t.detach().reshape(-1) for t in bucket])
        dist.broadcast(flat, src)
        if dist.get_rank() == src:
            continue
        offset = 0
        for t in bucket:
            t.copy_(flat[offset : offset + t.numel()].view_as(t))
            offset += t.numel()
