"""Torch on a parameter server: ``PsEmbedding`` (rows live on the PS set) and ``PsSync``
(dense parameters trained on the PS, synchronised with the worker's copy).

``PsEmbedding.forward`` looks up the batch's unique ids on the PS replicas that own them, all
at once; backward sends each unique row's gradient (duplicates already summed) back to its PS
as soon as autograd computes it — or, with ``defer_push``, keeps it for the next forward, whose
lookup carries it (``PsSet.lookup(push=...)``: the PS applies it first, so this worker sees the
same rows either way, with one round trip per PS and step instead of two).
``PsSync.step()`` after ``loss.backward()`` pushes the dense gradients (asynchronously by
default: it waits only for the previous step's calls), waits for the row pushes, and pulls
fresh dense values every ``pull_every`` steps — or at once when a PS is more than
``max_staleness`` updates ahead of this worker's copy (bounded staleness).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import KW_ONLY, dataclass, field

import numpy as np
import numpy.typing as npt
import torch

from flexjob.core.ps.optim import OptimizerSpec
from flexjob.core.ps.table import TableSpec
from flexjob.trainer.ps_set import PsSet, Sent


class PsEmbedding(torch.nn.Module):
    """An embedding table whose rows live on the PS set (``dim`` floats per id)."""

    def __init__(
        self,
        ps: PsSet,
        name: str,
        dim: int,
        *,
        num_rows: int = 0,
        init_scale: float = 0.01,
        seed: int = 0,
        defer_push: bool = False,
    ) -> None:
        """``defer_push``: send row gradients with the next lookup instead of at once
        (``flush``, or ``PsSync.step(final=True)``, sends them before that)."""
        super().__init__()
        self.ps = ps
        self.spec = TableSpec(name, dim, num_rows, init_scale, seed)
        self.defer_push = defer_push
        self.pending: list[Sent[int]] = []
        self.deferred: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] = []
        self.rows_looked_up = 0

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        flat = ids.detach().reshape(-1).to(torch.int64).cpu().numpy()
        rows, split = self.ps.lookup(self.spec.name, flat, push=self._take_deferred())
        self.rows_looked_up += int(split.unique.size)
        unique = torch.from_numpy(rows)
        if torch.is_grad_enabled() and self.training:
            unique.requires_grad_(True)

            def send(grad: torch.Tensor) -> None:
                g = np.ascontiguousarray(grad.detach().numpy(), dtype=np.float32)
                if self.defer_push:
                    self.deferred.append((split.unique, g))
                else:
                    self.pending.extend(self.ps.push_rows(self.spec.name, split, g))

            unique.register_hook(send)  # type: ignore[no-untyped-call]
        out = unique[torch.from_numpy(split.inverse)]
        return out.reshape(*ids.shape, self.spec.dim)

    def wait(self) -> int:
        """Wait for the row pushes in flight; returns the rows they updated."""
        done = sum(p.result() for p in self.pending)
        self.pending.clear()
        return done

    def flush(self) -> None:
        """Send the deferred row gradients now and wait for every push."""
        push = self._take_deferred()
        if push is not None:
            self.ps.lookup(self.spec.name, push[0][:0], push=push)
        self.wait()

    def _take_deferred(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None:
        if not self.deferred:
            return None
        parts, self.deferred = self.deferred, []
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([i for i, _ in parts]), np.concatenate([g for _, g in parts])


@dataclass(eq=False)
class PsSync:
    """Trains ``model`` on the PS set: its ``PsEmbedding`` tables and its dense parameters."""

    ps: PsSet
    model: torch.nn.Module
    optimizer: OptimizerSpec
    _: KW_ONLY
    pull_every: int = 1
    max_staleness: int | None = None
    sync: bool = False
    steps: int = field(default=0, init=False)
    _dense: dict[str, torch.nn.Parameter] = field(init=False)
    _in_flight: list[tuple[int, Sent[int]]] = field(default_factory=list, init=False)
    #: The latest dense version each PS answered a push with.
    _seen: list[int] = field(init=False)

    def __post_init__(self) -> None:
        if self.pull_every < 1:
            raise ValueError(f"pull_every must be >= 1, got {self.pull_every}")
        if self.max_staleness is not None and self.max_staleness < 0:
            raise ValueError(f"max_staleness must be >= 0 or None, got {self.max_staleness}")
        self._dense = dict(self.model.named_parameters())
        self._seen = [0] * self.ps.num_ps

    def embeddings(self) -> Iterator[PsEmbedding]:
        return (m for m in self.model.modules() if isinstance(m, PsEmbedding))

    def configure(self) -> bool:
        """Declare the model on the PS set, then take the dense values the PS hold (the first
        worker's initial values win). ``True`` when this worker declared it first."""
        dense = {k: p.detach().numpy().astype(np.float32) for k, p in self._dense.items()}
        created = self.ps.configure(self.optimizer, [e.spec for e in self.embeddings()], dense)
        self.pull(everything=True)
        return created

    def pull(self, everything: bool = False) -> None:
        """Copy the PS's dense values that changed since the last pull into the model."""
        with torch.no_grad():
            for name, value in self.ps.pull_dense(everything).items():
                self._dense[name].copy_(torch.from_numpy(value.copy()))

    def step(self, final: bool = False) -> None:
        """After ``loss.backward()``: push gradients, wait for last step's calls, pull when due,
        and zero the dense gradients. ``final``: this step's gradients must have reached the PS
        when it returns (e.g. before its data shard is reported done): deferred row gradients
        are sent and every push waited for."""
        grads = {
            k: p.grad.detach().numpy().astype(np.float32, copy=True)
            for k, p in self._dense.items()
            if p.grad is not None
        }
        self._wait_dense()
        self._in_flight = self.ps.push_dense(grads) if grads else []
        if self.sync or final:
            self._wait_dense()
        for emb in self.embeddings():
            if final:
                emb.flush()
            else:
                emb.wait()
        for p in self._dense.values():
            p.grad = None
        self.steps += 1
        stale = self.max_staleness is not None and self.staleness > self.max_staleness
        if self.steps % self.pull_every == 0 or stale:
            self.pull()

    def finish(self) -> None:
        """Send deferred row gradients and wait for every call in flight (at the end of
        training)."""
        self._wait_dense()
        for emb in self.embeddings():
            emb.flush()

    @property
    def staleness(self) -> int:
        """How many dense updates the most advanced PS is ahead of this worker's copy."""
        pulled = self.ps.dense_versions
        if len(self._seen) != len(pulled):  # the PS set changed size since the last push
            return 0
        return max(
            (seen - max(p, 0) for seen, p in zip(self._seen, pulled, strict=True)), default=0
        )

    def _wait_dense(self) -> None:
        for ps, call in self._in_flight:
            version = call.result()
            if len(self._seen) != self.ps.num_ps:  # the PS set changed size: versions anew
                self._seen = [0] * self.ps.num_ps
            if ps < len(self._seen):
                self._seen[ps] = max(self._seen[ps], version)
        self._in_flight = []
