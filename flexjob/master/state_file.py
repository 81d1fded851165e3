"""The master's state on disk: a snapshot file, replaced atomically, plus a journal of shard
reports appended since that snapshot.

The snapshot (``master_state.json``) is written to a temporary file in the same directory and
renamed over the old one, so a master killed at any moment leaves either the old or the new
snapshot, never half of one. Renaming over a file is slow on some file systems (ext4 flushes
the new file's data first, ~1 ms), so the one change that happens at request rate — an accepted
shard report — is instead appended as one line to ``master_state.journal`` (one ``write``
call: a killed process leaves whole lines; a torn last line is ignored) before the report is
answered. Loading replays the journal over the snapshot; entries already in the snapshot replay
harmlessly (reports are idempotent). A first master leaves a marker (``master.started``)
beside its first snapshot: a later master that finds the marker but no snapshot, or a snapshot
it cannot read, refuses to start (``StateLostError``) instead of starting the job over.

One master writes these files at a time (``lock``: ``master.state_lock``), and each writes under
its own generation, one more than the snapshot it restored: the snapshot records it
(``generation``) and every journal file starts with it (``{"gen": N}``), so lines a stale master
wrote after a newer one took over are not replayed; every write first checks that this master
still holds the lock. With ``fsync`` a write is on disk before it returns: the file's data,
and the directory after a rename or a new journal file. Not for deciding what goes in the state
or when (``master.persistence``).
"""

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from flexjob.api.errors import MasterError
from flexjob.master.snapshot import saved_generation
from flexjob.master.state_lock import StateLock

STARTED_MARKER = "master.started"


class StateLostError(MasterError):
    """The job ran in this directory before, but its saved progress is gone or unreadable."""


def check_not_lost(state_path: Path) -> None:
    """Before a master starts without a snapshot: fail if an earlier master left the marker."""
    if (state_path.parent / STARTED_MARKER).exists():
        raise StateLostError(
            f"{state_path} is missing, but a master of this job ran in {state_path.parent} "
            "before: its progress is lost; refusing to start the job over"
        )


def mark_started(state_path: Path) -> None:
    """After the first snapshot is saved: tell later masters that one must exist."""
    write_atomic(state_path.parent / STARTED_MARKER, "")


class StateFile:
    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self.journal_path = path.with_suffix(".journal")
        self._old_journal = path.with_suffix(".journal.old")
        self.fsync = fsync
        self._fd: int | None = None
        #: This master's generation: journal files it starts say so (``restore`` sets it).
        self.generation = 0
        self._lock: StateLock | None = None

    def lock(self) -> None:
        """Take the job state's lock (``MasterLockedError`` when another master holds it)."""
        if self._lock is None:
            self._lock = StateLock(self.path.parent)

    def release(self) -> None:
        """Close the journal and give the lock up."""
        self.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def check_held(self) -> None:
        """``MasterFencedError`` when this master lost the lock it took."""
        if self._lock is not None:
            self._lock.check()

    def load(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The saved snapshot (``None`` when there is none yet) and the journal entries to
        replay over it, oldest first."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            data = None
        except (OSError, ValueError) as exc:
            raise StateLostError(f"{self.path} cannot be read ({exc}): progress lost") from None
        if data is not None and not isinstance(data, dict):
            raise StateLostError(f"{self.path}: expected a JSON object")
        since = saved_generation(data)
        return data, _read_journal(self._old_journal, since) + _read_journal(
            self.journal_path, since
        )

    def save(self, data: dict[str, Any]) -> None:
        self.save_text(json.dumps(data, separators=(",", ":")))

    def save_text(self, text: str) -> None:
        """Write a snapshot (an already serialized JSON object)."""
        self.check_held()
        write_atomic(self.path, text, fsync=self.fsync)

    def append(self, entry: dict[str, Any]) -> None:
        """Add one entry to the journal (one line, one ``write``)."""
        self.append_lines([journal_line(entry)])

    def append_lines(self, lines: list[str]) -> None:
        """Add ``journal_line`` texts to the journal in one ``write`` (a kill leaves a prefix
        of whole lines and at most one torn line), then ``fsync`` once if asked."""
        self.check_held()  # even with nothing to write: a fenced master acknowledges nothing
        if not lines:
            return
        if self._fd is None:
            self._fd = os.open(self.journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            if os.fstat(self._fd).st_size == 0:  # a journal this master starts: its generation
                lines = [journal_line({GENERATION_KEY: self.generation}), *lines]
                if self.fsync:
                    fsync_dir(self.path.parent)
        data = "".join(lines).encode()
        while data:  # a regular file takes it in one go; a short write is finished here
            data = data[os.write(self._fd, data) :]
        if self.fsync:
            os.fsync(self._fd)

    def rotate_journal(self) -> None:
        """Start a fresh journal; keep the current one until ``drop_old_journal`` (call this
        when taking a snapshot, then drop once the snapshot is saved)."""
        self.close()
        if not self.journal_path.exists():
            return
        if self._old_journal.exists():  # the last snapshot failed: keep both journals' entries
            with self._old_journal.open("ab") as old:
                old.write(self.journal_path.read_bytes())
            self.journal_path.unlink()
        else:
            os.replace(self.journal_path, self._old_journal)
        if self.fsync:
            fsync_dir(self.path.parent)

    def drop_old_journal(self) -> None:
        self._old_journal.unlink(missing_ok=True)

    def drop_journals(self) -> None:
        """Forget every journal: only after a snapshot that includes them all was saved."""
        self.close()
        self.journal_path.unlink(missing_ok=True)
        self.drop_old_journal()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


_COMPACT = json.JSONEncoder(separators=(",", ":"))  # one encoder: dumps makes one per call


def journal_line(entry: dict[str, Any]) -> str:
    """One journal entry as the line ``append_lines`` writes."""
    return _COMPACT.encode(entry) + "\n"


#: The first entry of a journal file: the generation of the master that wrote it.
GENERATION_KEY = "gen"


def _read_journal(path: Path, since: int) -> list[dict[str, Any]]:
    """The entries of the journal at ``path``, but those under the header of a generation
    before ``since`` (a stale master's, written after a newer one restored the state)."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    entries = []
    stale = False  # under the header of an older generation
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:  # a line torn by a kill mid-write: never acknowledged
            continue
        if GENERATION_KEY in entry:
            stale = int(entry[GENERATION_KEY]) < since
        elif not stale:
            entries.append(entry)
    return entries


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str, *, fsync: bool = False) -> None:
    """Replace ``path`` with ``text`` atomically (temp file in the same directory + rename);
    with ``fsync``, durably (the file, then the directory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if fsync:
            fsync_dir(path.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
