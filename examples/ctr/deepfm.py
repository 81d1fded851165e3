"""DeepFM over one parameter-server embedding table: per id, column 0 is its first-order
(wide) weight and columns 1.. its factorisation-machine vector, shared with the deep part."""

import torch

from flexjob.trainer.ps_set import PsSet
from flexjob.trainer.ps_torch import PsEmbedding

FACTORS = 8


class DeepFM(torch.nn.Module):
    def __init__(
        self, ps: PsSet, fields: int, vocab: int, hidden: int = 64, defer_push: bool = False
    ) -> None:
        """``defer_push``: a step's row gradients ride with the next step's lookup (one round
        trip per PS and step instead of two), which every *other* worker sees one step late:
        with asynchronous workers it can cost accuracy (``docs/parameter-server.md``)."""
        super().__init__()
        self.features = PsEmbedding(
            ps,
            "features",
            1 + FACTORS,
            num_rows=vocab,
            init_scale=0.01,
            seed=1,
            defer_push=defer_push,
        )
        self.bias = torch.nn.Parameter(torch.zeros(1))
        self.deep = torch.nn.Sequential(
            torch.nn.Linear(fields * FACTORS, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, 1),
        )

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        rows = self.features(ids)  # (batch, fields, 1 + FACTORS)
        wide = rows[..., 0].sum(dim=1)
        v = rows[..., 1:]
        fm = 0.5 * (v.sum(dim=1).pow(2) - v.pow(2).sum(dim=1)).sum(dim=1)
        deep = self.deep(v.flatten(1)).squeeze(-1)
        return self.bias + wide + fm + deep
