"""Saves a flash copy at step 1, then is SIGKILLed in the middle of its save of step 2 (after
the tensors, before the seal): the slot of step 2 is left torn. Args: checkpoint dir, shm dir."""

import os
import signal
import sys

import torch

from flexjob.trainer import flash
from flexjob.trainer.flash import FlashCheckpoint

storage, shm = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
model = torch.nn.Linear(64, 64)
ck = FlashCheckpoint(storage, shm)
ck.save(model=model, step=1)
print(model.weight.sum().item(), flush=True)
with torch.no_grad():
    model.weight.add_(1.0)
real_seal = flash.encode_seal


def die_before_the_seal(seq: int) -> bytes:
    os.kill(os.getpid(), signal.SIGKILL)
    return real_seal(seq)


flash.encode_seal = die_before_the_seal  # type: ignore[assignment]
ck.save(model=model, step=2)
