"""The training script of ``test_spare.py``: the trainer helpers over 1,600 samples; every
committed step appends ``node pid indices...`` to ``$SPARE_TEST_DIR/steps-<pid>.txt``. Slow
(0.25 s a step) while ``$SPARE_TEST_DIR/slow`` exists."""

import os
import time
from pathlib import Path

import torch

from flexjob.trainer import ElasticSampler, ElasticTrainer

out = Path(os.environ["SPARE_TEST_DIR"])
node = os.environ["FLEXJOB_NODE_ID"]
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
sampler = ElasticSampler(batch_size=8, size=1600, shard_size=8, epochs=1)
log = (out / f"steps-{os.getpid()}.txt").open("a", buffering=1)
with ElasticTrainer(model, opt, sampler, checkpoint=False) as t:
    t.on_step(lambda s: log.write(f"{node} {os.getpid()} {' '.join(map(str, s.indices))}\n"))
    for s in t.steps():
        with t.step():
            t.model(torch.randn(len(s.indices), 4)).sum().backward()
            opt.step()
        if (out / "slow").exists():
            time.sleep(0.25)
print(f"trained on {node}", flush=True)
