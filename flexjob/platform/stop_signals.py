"""The signals that stop a flexjob process and everything it started: SIGTERM (``timeout``,
``docker stop``, Slurm, Kubernetes), SIGINT (Ctrl-C) and SIGHUP (a closed terminal).

``raise_on_stop_signals`` turns the first of them into ``StopRequested`` in the main thread, so
the process's ``finally`` blocks stop its children with their grace period; later ones are
ignored until the cleanup is done (a second Ctrl-C does not cut a trainer's checkpoint short).
Exit code: 128 + the signal number, as a shell reports a process killed by it. Not for
child processes (each stops its own children the same way).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from types import FrameType

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class StopRequested(KeyboardInterrupt):
    """A stop signal arrived; ``exit_code`` is 128 + its number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = 128 + signum


def _ignore_more(signum: int, frame: FrameType | None) -> None:
    log.warning("%s: already stopping", signal.Signals(signum).name)


def _raise(signum: int, frame: FrameType | None) -> None:
    for sig in STOP_SIGNALS:
        signal.signal(sig, _ignore_more)
    raise StopRequested(signum)


@contextlib.contextmanager
def raise_on_stop_signals() -> Iterator[None]:
    """Within the block, a stop signal raises ``StopRequested`` (main thread only; elsewhere
    this does nothing). The previous handlers come back on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in STOP_SIGNALS:
        signal.signal(sig, _raise)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
