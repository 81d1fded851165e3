"""A plain PyTorch Lightning script, as its users write it: ``Trainer(strategy="ddp",
num_nodes=2, accelerator="cpu")`` on a tiny regression made here. Nothing flexjob in it.

``--step-delay S`` slows each step and ``--progress-dir D`` has each rank write its step to
``D/rank<R>.step`` with its pid (a test kills a worker meanwhile). Prints one
``lightning: rank=R world=W node=N steps=K loss=L`` line per rank at the end.
"""

import argparse
import os
import time

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class Regression(L.LightningModule):
    def __init__(self, step_delay: float, progress_dir: str) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
        self.step_delay = step_delay
        self.progress_dir = progress_dir

    def training_step(self, batch: list[torch.Tensor], _: int) -> torch.Tensor:
        if self.step_delay:
            time.sleep(self.step_delay)
        if self.progress_dir:
            path = os.path.join(self.progress_dir, f"rank{self.global_rank}.step")
            with open(path, "w") as f:
                f.write(f"{self.global_step} {os.getpid()}")
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--step-delay", type=float, default=0.0)
    parser.add_argument("--progress-dir", default="")
    args = parser.parse_args()
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(256, 4, generator=gen)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    loader = DataLoader(TensorDataset(x, y), batch_size=16)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        num_nodes=args.nodes,
        strategy="ddp",
        max_epochs=args.epochs,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        logger=False,
    )
    model = Regression(args.step_delay, args.progress_dir)
    trainer.fit(model, loader)
    loss = float(trainer.callback_metrics["loss"])
    print(
        f"lightning: rank={trainer.global_rank} world={trainer.world_size} "
        f"node={trainer.node_rank} steps={trainer.global_step} loss={loss:.4f} "
        f"restart={os.environ.get('TORCHELASTIC_RESTART_COUNT')}",
        flush=True,
    )


if __name__ == "__main__":
    main()
