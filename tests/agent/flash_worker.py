"""A worker for the flash saver test: with the agent's socket and directory from its
environment, it saves flash copies of steps 1 and 2 (asking for storage at step 2), then,
once told on stdin, step 3 (memory only), and waits to be killed. Arg: checkpoint dir."""

import sys
import time

import torch

from flexjob.trainer.flash import FlashCheckpoint

ck = FlashCheckpoint.for_process(sys.argv[1], "unused", 0)
model = torch.nn.Linear(32, 32)
for step in (1, 2):
    assert ck.save(model=model, step=step, persist=step == 2)
print("saved 2", flush=True)
sys.stdin.readline()
assert ck.save(model=model, step=3)
print("saved 3", flush=True)
time.sleep(600)
