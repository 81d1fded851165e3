"""A short ElasticTrainer job for ``tests/gpu``: trains a small model on this rank's device
and prints ``device=<device> backend=<backend> steps=<n> param_device=<device>``."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

from flexjob.trainer import ElasticSampler, ElasticTrainer

N = 512
torch.manual_seed(0)
X = torch.randn(N, 32)
Y = X[:, :4].argmax(1)


def main() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    sampler = ElasticSampler(batch_size=32, size=N, shard_size=32, epochs=1)
    with ElasticTrainer(model, opt, sampler, checkpoint=False) as t:
        for s in t.steps():
            with t.step():
                idx = torch.tensor(s.indices, dtype=torch.int64)
                x, y = X[idx].to(t.device), Y[idx].to(t.device)
                loss = F.cross_entropy(t.model(x), y, reduction="sum") * s.loss_scale
                loss.backward()
                opt.step()
        param = next(model.parameters()).device
        print(f"device={t.device} backend={dist.get_backend()} steps={t.step_count} "
              f"param_device={param}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
