"""Checkpoints of model, optimizer and sampler state, written atomically.

``Checkpointer.save`` writes a temp file in the target directory and renames it over the
checkpoint, so a reader sees either the old or the new file, never a torn one. Not a
distributed checkpoint: one process (rank 0) writes the full state.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Required, TypedDict, Unpack

import torch

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "checkpoint.pt"


class TrainState(TypedDict, total=False):
    """What a checkpoint holds, as the keywords of ``Checkpointer.save`` and
    ``FlashCheckpoint.save`` alike: the model, its optimizer, the sampler's state (which
    shards are done), the step and anything ``extra`` (picklable by ``torch.save``)."""

    model: Required[torch.nn.Module]
    optimizer: torch.optim.Optimizer | None
    sampler_state: dict[str, Any] | None
    step: int
    extra: dict[str, Any] | None


def training_state(state: TrainState) -> dict[str, Any]:
    """The dict a checkpoint stores for ``state`` (this file's and the flash copies' alike)."""
    optimizer = state.get("optimizer")
    return {
        "model": state["model"].state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "sampler": state.get("sampler_state") or {},
        "step": state.get("step", 0),
        "extra": state.get("extra") or {},
    }


class Checkpointer:
    """Saves and loads ``{"model", "optimizer", "sampler", "step", "extra"}`` in one file."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.path = self.directory / CHECKPOINT_FILE

    def exists(self) -> bool:
        return self.path.is_file()

    def save(self, **train: Unpack[TrainState]) -> Path:
        """Write the checkpoint atomically (temp file + fsync + rename); return its path."""
        self.directory.mkdir(parents=True, exist_ok=True)
        state = training_state(train)
        fd, tmp = tempfile.mkstemp(prefix=".checkpoint-", suffix=".tmp", dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        log.debug("checkpoint at step %d written to %s", state["step"], self.path)
        return self.path

    def load(
        self,
        *,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
    ) -> dict[str, Any] | None:
        """Load into ``model``/``optimizer``; return the whole state, or None without a file."""
        if not self.exists():
            return None
        state: dict[str, Any] = torch.load(self.path, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
        if optimizer is not None and state.get("optimizer") is not None:
            optimizer.load_state_dict(state["optimizer"])
        log.info("resumed from checkpoint %s at step %d", self.path, state.get("step", 0))
        return state
