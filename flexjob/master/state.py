"""The master's state file: one JSON document in the job directory, replaced atomically.

Writes go to a temporary file in the same directory and are renamed over the old one, so a
master killed at any moment leaves either the old or the new state, never half of one. Not
for deciding what goes in the state (``master.service`` does that).
"""

import json
import os
import tempfile
from pathlib import Path
from typing import Any


class StateFile:
    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self._fsync = fsync

    def load(self) -> dict[str, Any] | None:
        """The saved state, or ``None`` when there is none yet."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"{self.path}: expected a JSON object")
        return data

    def save(self, data: dict[str, Any]) -> None:
        self.save_text(json.dumps(data, separators=(",", ":")))

    def save_text(self, text: str) -> None:
        """Save an already serialized JSON object."""
        write_atomic(self.path, text, fsync=self._fsync)


def write_atomic(path: Path, text: str, *, fsync: bool = False) -> None:
    """Replace ``path`` with ``text`` atomically (temp file in the same directory + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
