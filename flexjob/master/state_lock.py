"""One master per job state: an exclusive ``flock`` on ``master.lock`` in the state's
directory, held while the master lives.

A second master on the same directory refuses to start (``MasterLockedError``, naming the
holder's pid and host, which the holder writes into the file); the kernel releases the lock
when its holder dies, however it dies, so a restarted master takes it at once. Should the lock
file be removed or replaced under a running master (a lock another master could then take),
``held`` turns false and that master's writes are refused (``MasterFencedError``, raised by
``master.persistence`` before it writes), the way a fenced leader's are. Within one process
(tests restarting a master in place) a new master takes the lock over from an older one, which
is fenced from then on. Not for the state's files (``master.state_file``).
"""

import fcntl
import os
import socket
import threading
from pathlib import Path

from flexjob.api.errors import ConflictError, MasterError, UnavailableError

LOCK_FILE = "master.lock"

_HELD: dict[Path, "StateLock"] = {}  # the locks this process holds, by lock file
_HELD_LOCK = threading.Lock()


class MasterLockedError(MasterError, ConflictError):
    """Another master holds this job state."""


class MasterFencedError(MasterError, UnavailableError):
    """This master no longer holds its job state: another one may; its writes are refused."""


class StateLock:
    """The lock of ``directory`` (taken when made; ``MasterLockedError`` when held)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / LOCK_FILE
        with _HELD_LOCK:
            older = _HELD.pop(self.path.resolve(), None)
            if older is not None:  # a master of this process restarted in place: fenced
                older._file.close()
            self._take(directory)
            _HELD[self.path.resolve()] = self

    def _take(self, directory: Path) -> None:
        file = open(self.path, "a+b")  # noqa: SIM115 - held open while the master lives
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            holder = file.read().decode(errors="replace").strip() or "unknown"
            file.close()
            raise MasterLockedError(
                f"{directory}: another master holds this job's state ({holder}); refusing to "
                "start a second master on it"
            ) from None
        file.truncate(0)
        file.write(f"pid={os.getpid()} host={socket.gethostname()}\n".encode())
        file.flush()
        self._file = file
        self._fenced = False

    def held(self) -> bool:
        """Whether the lock file at ``path`` is still the one this master locked (once not,
        never again)."""
        if self._fenced or self._file.closed:
            self._fenced = True
            return False
        try:
            ours = os.fstat(self._file.fileno())
            self._fenced = ours.st_nlink == 0 or os.stat(self.path).st_ino != ours.st_ino
        except FileNotFoundError:
            self._fenced = True
        return not self._fenced

    def check(self) -> None:
        """``MasterFencedError`` unless ``held``."""
        if not self.held():
            raise MasterFencedError(
                f"{self.path} was removed or replaced: this master no longer holds the job's "
                "state, so it writes nothing more"
            )

    def release(self) -> None:
        self._file.close()
        with _HELD_LOCK:
            if _HELD.get(self.path.resolve()) is self:
                del _HELD[self.path.resolve()]
