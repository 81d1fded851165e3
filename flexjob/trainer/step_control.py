"""The control all-reduce that opens every step of the elastic trainer.

One small int64 tensor, summed over the ranks: the samples each rank has in hand, whether it
has data left, whether a node waits to join, rank 0's adaptive global-batch proposal
(``trainer.batch_adapter``; the other ranks send zeros) and the peer-shard slots
(``trainer.peer_shards``). From the sums every rank takes the same decision: step, wait for
data, re-form, or stop. Not for acting on them (``trainer.elastic``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from flexjob.trainer.device import collective_device
from flexjob.trainer.peer_shards import PeerShards
from flexjob.trainer.sampler import Batch, NoShard
from flexjob.trainer.step_time import OwnStepTimer


@dataclass(frozen=True, slots=True)
class Control:
    """What all ranks agreed on for this step."""

    total: int  # samples in hand over all ranks
    more: bool  # some rank has data left
    reform: bool  # some node waits to join the world
    batch: int  # rank 0's proposed global batch (0: none)
    gain: int  # its gain in millionths (``BatchAdapter.proposal``)


def all_reduce_control(
    got: list[Batch] | NoShard,
    wants_reform: bool,
    proposal: tuple[int, int],
    peers: PeerShards,
    timer: OwnStepTimer,
) -> Control:
    """Sum this rank's part with every other rank's (raises what ``dist.all_reduce`` raises:
    a dead peer's collective error); hands the summed slots to ``peers``."""
    n = sum(len(b.indices) for b in got) if isinstance(got, list) else 0
    more = 0 if got is NoShard.END or got == [] else 1  # [] : no micro-batch planned
    batches = got if isinstance(got, list) else []
    slots = peers.encode(batches, dist.get_world_size())
    values = [n, more, int(wants_reform), *proposal, *slots]
    ctl = torch.tensor(values, dtype=torch.int64, device=collective_device())
    timer.control_entered()
    dist.all_reduce(ctl)
    timer.control_left()
    values = [int(v) for v in ctl.tolist()]
    total, more_sum, wants_sum, batch, gain = values[:5]
    peers.control_done(values[5:])
    return Control(total, more_sum > 0, wants_sum > 0, batch, gain)
