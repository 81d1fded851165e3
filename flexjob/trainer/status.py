"""Progress the trainer publishes for its agent: a small JSON file, rewritten atomically.

The agent reads it to report step throughput to the master and to learn that the process
re-forms its world in place (so a world change must not restart it). Not a metrics system.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypedDict, Unpack

from flexjob.trainer.settings import TrainerSettings, current_or


@dataclass(frozen=True, slots=True)
class TrainerStatus:
    pid: int
    in_place: bool  # re-forms its world itself (the trainer helpers are in use)
    round: int
    step: int
    samples: int
    epoch: int
    world_size: int
    time: float
    rank: int = -1  # the process's global rank in its current world (-1: none yet)
    #: Own seconds per step, waits for peers left out (``trainer.step_time``; 0: not yet).
    step_seconds: float = 0.0
    #: Written between steps with every step committed and reported (waiting for a world or
    #: for data): the process may be stopped now without losing a trained sample.
    idle: bool = False
    #: Written when the trainer closed: the process is ending and has no progress left to
    #: show (its interpreter's exit can take seconds: a last garbage collection of torch's
    #: objects on a loaded machine), so it is no hang.
    closed: bool = False


class StatusFlags(TypedDict, total=False):
    """What a write may say besides the trainer's place (defaults: ``TrainerStatus``'s)."""

    step_seconds: float
    idle: bool
    closed: bool


def read_status(path: str | os.PathLike[str]) -> TrainerStatus | None:
    """The last status written to ``path``, or None when there is none (yet)."""
    try:
        data = json.loads(Path(path).read_text())
        return TrainerStatus(**data)
    except (OSError, ValueError, TypeError):
        return None


class StatusWriter:
    """Writes ``TrainerStatus`` to ``$FLEXJOB_STATUS_FILE`` at most every ``interval_s``."""

    def __init__(
        self,
        path: str | None = None,
        interval_s: float = 0.5,
        settings: TrainerSettings | None = None,
    ) -> None:
        self.path = path if path is not None else current_or(settings).status_file
        self.interval_s = interval_s
        self._last = 0.0

    def write(
        self,
        *,
        round: int,
        step: int,
        samples: int,
        epoch: int,
        world_size: int,
        force: bool = False,
        **shown: Unpack[StatusFlags],
    ) -> None:
        """Write the status now if ``force`` or ``interval_s`` passed since the last."""
        if not self.path:
            return
        now = time.time()
        if not force and now - self._last < self.interval_s:
            return
        self._last = now
        rank = TrainerSettings.current().rank  # the trainer sets it on each re-form
        rank = -1 if rank is None else rank
        status = TrainerStatus(
            os.getpid(),
            True,
            round,
            step,
            samples,
            epoch,
            world_size,
            now,
            rank,
            **shown,
        )
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            Path(tmp).write_text(json.dumps(asdict(status)))
            os.replace(tmp, self.path)
        except OSError:
            pass  # progress reporting never breaks training
