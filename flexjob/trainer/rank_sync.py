"""Bringing every rank of a freshly formed world to the same training state.

The rank that has committed the most steps (the oldest survivor; ties go to the lowest rank)
broadcasts its model tensors, optimizer state and step count. A newcomer or a restarted
process therefore continues from the survivors' memory, not from a checkpoint on disk.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist


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
    steps = torch.zeros(world, dtype=torch.int64)
    steps[rank] = step
    dist.all_reduce(steps)
    src = choose_source([int(s) for s in steps.tolist()])
    with torch.no_grad():
        for tensor in module.state_dict().values():
            dist.broadcast(tensor, src)
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
