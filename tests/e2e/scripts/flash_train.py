"""Trains a small model; flash checkpoints are on when $FLEXJOB_FLASH_CHECKPOINT=1 (every step
to memory; storage only every 1000 steps, so a kill finds nothing recent on disk). Prints
where it resumed from; the step delay in seconds is its argument."""

import sys
import time

import torch
import torch.nn.functional as F

from flexjob.trainer import ElasticSampler, ElasticTrainer

delay = float(sys.argv[1])
torch.manual_seed(0)
model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
sampler = ElasticSampler(batch_size=4, size=240, shard_size=4, epochs=1, shuffle=False)
trainer = ElasticTrainer(model, opt, sampler, checkpoint_every=1000)
with trainer:
    print(f"resumed step={trainer.step_count} from={trainer.resumed_from}", flush=True)
    for step in trainer.steps():
        with trainer.step():
            x = torch.randn(len(step.indices), 8)
            y = torch.zeros(len(step.indices), dtype=torch.int64)
            F.cross_entropy(trainer.model(x), y).backward()
            opt.step()
        time.sleep(delay)
    print(f"done step={trainer.step_count}", flush=True)
