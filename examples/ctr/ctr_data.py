"""A seeded synthetic click-through-rate data set whose best possible AUC is known.

24 categorical fields (vocabularies of 200k down to 1k ids, 1,186,000 in all) with Zipf-skewed
ids; labels drawn from a known ground-truth model, a factorisation machine (a bias, a weight
and a latent vector per frequent id, pairwise interactions between all fields). The
ground-truth AUC is the AUC of the true click probabilities on the held-out split: no model
can do better on average.
Ids are global (field offset + id), so one embedding table holds every field.
"""

from dataclasses import dataclass

import numpy as np

VOCABS = (200_000,) * 4 + (50_000,) * 6 + (10_000,) * 8 + (1_000,) * 6
OFFSETS = np.concatenate([[0], np.cumsum(VOCABS)[:-1]]).astype(np.int64)
TOTAL_VOCAB = int(sum(VOCABS))
HEAD = 100  # ids ranked below this (by frequency) carry signal; the tail's weight is zero
LATENT = 4  # size of the ground truth's interaction vectors
ZIPF_A = 1.5


@dataclass(frozen=True)
class CtrData:
    ids: np.ndarray  # (n, fields) int64 global ids
    labels: np.ndarray  # (n,) float32 0/1
    probs: np.ndarray  # (n,) true click probability

    def __len__(self) -> int:
        return int(self.labels.size)


def _ground_truth(seed: int) -> tuple[float, np.ndarray, np.ndarray]:
    """Bias, first-order weights (fields x HEAD), interaction vectors (fields x HEAD x LATENT)
    of a factorisation machine over the frequent ids."""
    rng = np.random.default_rng(seed + 1)
    weights = rng.normal(0, 0.6, (len(VOCABS), HEAD))
    latent = rng.normal(0, 0.2, (len(VOCABS), HEAD, LATENT))
    return -1.0, weights, latent


def generate(n: int, seed: int) -> CtrData:
    """``n`` samples; the same ``seed`` gives the same ground truth and the same samples."""
    rng = np.random.default_rng(seed)
    bias, weights, latent = _ground_truth(0)
    ranks = (rng.zipf(ZIPF_A, size=(n, len(VOCABS))) - 1) % np.array(VOCABS)
    head = ranks < HEAD
    fields = np.arange(len(VOCABS))[None, :]
    clipped = np.minimum(ranks, HEAD - 1)
    w = np.where(head, weights[fields, clipped], 0.0)  # (n, fields)
    v = np.where(head[..., None], latent[fields, clipped], 0.0)  # (n, fields, LATENT)
    pairwise = 0.5 * (v.sum(axis=1) ** 2 - (v**2).sum(axis=1)).sum(axis=1)
    logit = bias + w.sum(axis=1) + pairwise
    probs = 1.0 / (1.0 + np.exp(-logit))
    labels = (rng.random(n) < probs).astype(np.float32)
    # Scatter ranks over each field's id space, then make ids global.
    ids = (ranks * 7919 + 13) % np.array(VOCABS) + OFFSETS
    return CtrData(ids.astype(np.int64), labels, probs)


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve (the Mann-Whitney statistic; tied scores get half credit)."""
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    starts = np.cumsum(counts) - counts
    ranks = (starts + (counts + 1) / 2.0)[inverse]  # 1-based average rank of each score
    positive = labels > 0.5
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def splits(train: int, test: int, seed: int) -> tuple[CtrData, CtrData]:
    """The training split and the held-out split (different seeds, same ground truth)."""
    return generate(train, seed), generate(test, seed + 1000)
