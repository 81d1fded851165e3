"""Where rank 0 saves the elastic trainer's state, when, and what a start resumes from.

Without flash checkpoints rank 0 writes ``checkpoint.pt`` (``trainer.checkpoint``) every
``checkpoint_every`` steps and at the end. With them it copies its state to shared memory
(``trainer.flash``) around the commit of every ``flash_every``-th step, and every
``checkpoint_every`` steps that copy goes to storage (the agent writes it). A start resumes
from the newest flash copy, else the checkpoint file. Not for the step loop
(``trainer.elastic``) nor for copying state between ranks (``trainer.rank_sync``).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import torch

from flexjob.trainer.checkpoint import Checkpointer
from flexjob.trainer.flash import FlashCheckpoint, flash_enabled
from flexjob.trainer.sampler import Batch, ElasticSampler
from flexjob.trainer.world import NodeIdentity


class StateSaver:
    """Saves ``model``, ``optimizer`` and ``sampler``'s state under ``directory`` (None:
    nothing is saved)."""

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        sampler: ElasticSampler,
        directory: str | os.PathLike[str] | None,
        ident: NodeIdentity,
        *,
        checkpoint_every: int,
        flash: bool | None,
        flash_every: int,
    ) -> None:
        self._model = model
        self._optimizer = optimizer
        self._sampler = sampler
        self.checkpointer = Checkpointer(directory) if directory else None
        self.checkpoint_every = checkpoint_every
        #: Flash checkpoints (``flash``, else ``$FLEXJOB_FLASH_CHECKPOINT``): rank 0 copies its
        #: state to shared memory every ``flash_every`` steps; every ``checkpoint_every``
        #: steps the agent writes that copy to storage instead of ``checkpointer``.
        self.flash = (
            FlashCheckpoint.for_process(directory, ident.node_id, ident.local_rank)
            if directory and flash_enabled(flash)
            else None
        )
        if flash_every < 1:
            raise ValueError(f"flash_every must be >= 1, got {flash_every}")
        self.flash_every = flash_every

    def restore(self) -> dict[str, Any] | None:
        """The newest saved state (its ``"source"``: ``"memory"``/``"storage"`` for a flash
        copy, ``"checkpoint"`` for the file), loaded into the model and optimizer; None when
        there is none."""
        model, optimizer = self._model, self._optimizer
        state = self.flash.restore(model=model, optimizer=optimizer) if self.flash else None
        if state is None and self.checkpointer is not None:
            state = self.checkpointer.load(model=model, optimizer=optimizer)
            if state is not None:
                state["source"] = "checkpoint"
        return state

    def commit(self, batches: list[Batch], step: int, rank: int) -> None:
        """Commit ``batches`` (their finished shards reported to the master) as step ``step``;
        on rank 0, when a flash copy is due, inside ``FlashCheckpoint.saving``: the tensors
        are copied before the report, the copy sealed after it (its step and the master's
        shards agree)."""
        due = self._stored_after(step) or step % self.flash_every == 0
        saving: contextlib.AbstractContextManager[dict[str, Any]] = contextlib.nullcontext({})
        if self.flash is not None and due and rank == 0:
            persist = self._stored_after(step)
            saving = self.flash.saving(self._model, self._optimizer, step=step, persist=persist)
        with saving as sampler_state:
            for batch in batches:
                self._sampler.commit(batch)
            sampler_state.update(self._sampler.state_dict())

    def after_step(self, step: int, rank: int) -> None:
        """Rank 0 writes the checkpoint file when step ``step`` is due for storage (with
        flash checkpoints on, ``commit`` saved)."""
        if self.flash is None and rank == 0 and self._stored_after(step):
            self._save(step)

    def finish(self, step: int, rank: int) -> None:
        """The end of training: rank 0's state goes to storage."""
        if self.flash is not None and rank == 0:
            sampler = self._sampler.state_dict()
            self.flash.save(
                model=self._model, optimizer=self._optimizer, sampler_state=sampler, step=step,
                persist=True,
            )  # fmt: skip
            self.flash.finish()
        elif self.checkpointer is not None and rank == 0:
            self._save(step)

    def close(self) -> None:
        if self.flash is not None:
            self.flash.close()

    def _save(self, step: int) -> None:
        assert self.checkpointer is not None
        self.checkpointer.save(
            model=self._model,
            optimizer=self._optimizer,
            sampler_state=self._sampler.state_dict(),
            step=step,
        )

    def _stored_after(self, step: int) -> bool:
        """True when ``step`` is one that goes to storage (every ``checkpoint_every``)."""
        every = self.checkpoint_every
        return self.checkpointer is not None and every > 0 and step % every == 0
