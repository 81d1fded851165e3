"""Ending a process whose work is done without the interpreter's teardown.

``exit_now`` runs the ``atexit`` handlers and flushes the standard streams, then ends the
process as a ``multiprocessing`` child does. That teardown (freeing every object, module by
module) took 15-100 s for a torch process on a loaded machine (issue 37), and a few tenths of
a second for an agent or ``flexjob run`` between the job's last line and their exit. Only for
a process that finished: one that raised still gets the normal exit (and its traceback).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn


def exit_status(code: object) -> int:
    """What ``sys.exit(code)`` makes the process's status (a message is printed, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def exit_now(code: int) -> NoReturn:
    """End now with ``code``; as at a normal exit, non-daemon threads are waited for first
    (after the threading exit hooks, which end idle ``concurrent.futures`` pools: they would
    otherwise wait forever), then the ``atexit`` handlers run and the streams are flushed."""
    if threading.current_thread() is threading.main_thread():
        threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter's exit runs
    else:
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
