"""A plain HF Accelerate script: ``Accelerator(cpu=True)`` prepares a tiny model, optimizer
and data made here, trains a few steps and checks the ranks agree. Nothing flexjob in it.
Prints one ``accelerate: rank=R world=W steps=K checksum=C`` line per rank.
"""

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    accelerator = Accelerator(cpu=True)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(128, 4, generator=gen)
    y = x.sum(dim=1, keepdim=True)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(TensorDataset(x, y), batch_size=8)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    steps = 0
    for xb, yb in loader:
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        steps += 1
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    checksum = accelerator.reduce(weights.sum().reshape(1), reduction="mean").item()
    own = weights.sum().item()
    assert abs(own - checksum) < 1e-5, f"rank {accelerator.process_index} drifted: {own}"
    print(
        f"accelerate: rank={accelerator.process_index} world={accelerator.num_processes} "
        f"steps={steps} checksum={checksum:.5f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
