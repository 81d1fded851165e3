"""The first thing a training process runs: import torch, say "ready", wait for the world.

The agent starts workers through this module so that the slow part of a start (importing
torch) happens before the node joins the rendezvous: the running workers then wait only for
the script's own setup. ``torch._dynamo`` (which a script's first optimizer imports) follows on
a thread while the node joins. With ``--no-torch`` (``agent.target.preimport_torch`` said no:
the script cannot use torch) it says "ready" at once; with ``--warm`` (a warm spare's,
``agent.spare``) it says so only once torch, ``torch._dynamo`` and the trainer helpers are all
imported. The agent sends one JSON line on stdin — environment (with ``replace_env``: all of
it, and ``cwd``), argv and the script or module to run — and the bootstrap runs it as
``__main__``; an exception that ends it is recorded in its ``TORCHELASTIC_ERROR_FILE``. The
imports run with the garbage collector off (``_CollectorPause``). Not for user imports.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import runpy
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

from flexjob.agent.torchrun_env import write_error
from flexjob.api.names import ENV_AGENT_PID, ENV_STATUS_FILE, ENV_TORCHELASTIC_ERROR_FILE
from flexjob.platform.fast_exit import exit_now, exit_status

READY_SUFFIX = ".ready"
NO_TORCH = "--no-torch"
WARM = "--warm"


_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Linux: get SIGKILL when the agent dies; exit now if it is already gone."""
    parent = os.environ.get(ENV_AGENT_PID)
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        return
    if parent and os.getppid() != int(parent):
        os._exit(137)  # the agent died before we could watch it


def _signal_ready() -> None:
    status = os.environ.get(ENV_STATUS_FILE)
    if status:
        Path(status + READY_SUFFIX).write_text(str(os.getpid()))


class _CollectorPause:
    """The cyclic garbage collector stays off while any holder holds it: torch's and
    ``torch._dynamo``'s imports spend ~20% of their CPU (~0.5 CPU-s a process) in collections
    that find next to nothing. The bootstrap holds it until the script starts, the preimport
    thread until it is done (the script's first optimizer waits for that import anyway)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders: set[str] = set()

    def hold(self, holder: str) -> None:
        with self._lock:
            self._holders.add(holder)
            gc.disable()

    def release(self, holder: str) -> None:
        with self._lock:
            self._holders.discard(holder)
            if not self._holders:
                gc.enable()


_PAUSE = _CollectorPause()


def _run(message: dict[str, object]) -> None:
    _PAUSE.release("imports")
    env = message.get("env", {})
    assert isinstance(env, dict)
    if message.get("replace_env"):
        os.environ.clear()
        # The new environment's module path too (the interpreter read the spare's at start).
        path = str(env.get("PYTHONPATH", "")).split(os.pathsep)
        sys.path[1:1] = [p for p in path if p and p not in sys.path]
    os.environ.update({str(k): str(v) for k, v in env.items()})
    if message.get("cwd"):
        os.chdir(str(message["cwd"]))
    target = str(message["target"])
    args = [str(a) for a in message.get("args", [])]  # type: ignore[attr-defined]
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the user script gets an ordinary stdin
    if message.get("module"):
        sys.argv = [target, *args]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [target, *args]
        sys.path.insert(0, str(Path(target).resolve().parent))
        runpy.run_path(target, run_name="__main__")


def _import_optimizers() -> None:
    """``torch._dynamo``, which the first ``torch.optim`` optimizer imports (~1.5 s)."""
    import torch._dynamo  # noqa: F401


def _preimport() -> None:
    """``_import_optimizers`` ahead of the script, only to save it time: a failure here is the
    script's own to meet (and report) when it imports the same, so it is not printed twice."""
    try:
        with contextlib.suppress(Exception):
            _import_optimizers()
    finally:
        _PAUSE.release("preimport")


def _import_warm() -> None:
    """What a warm spare's workers hold before any job: all that a trainer's start imports."""
    _import_optimizers()
    import torch.nn.parallel  # noqa: F401

    import flexjob.trainer.elastic
    import flexjob.trainer.link  # noqa: F401


def main() -> None:
    _PAUSE.hold("imports")
    die_with_parent()
    flags = sys.argv[1:]
    if NO_TORCH not in flags:
        import torch
        import torch.distributed  # noqa: F401

        if WARM in flags:
            _import_warm()
        else:  # while the node joins: most scripts build an optimizer before their first step
            _PAUSE.hold("preimport")
            preimport = threading.Thread(target=_preimport, name="flexjob-preimport")
            preimport.daemon = True
            preimport.start()
    _signal_ready()
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)  # the agent went away before starting us
    try:
        _run(json.loads(line))
    except SystemExit as done:
        exit_now(exit_status(done.code))
    except Exception as exc:
        _record(exc)
        raise
    exit_now(0)


def _record(exc: Exception) -> None:
    """An exception that ends the script goes to its TORCHELASTIC_ERROR_FILE, as torch's
    ``@record`` would write it (unless ``@record`` did): the agent reads it for the root cause
    and for whether a restart can help (``torchrun_env.permanent``)."""
    path = os.environ.get(ENV_TORCHELASTIC_ERROR_FILE)
    if not path:
        return
    with contextlib.suppress(OSError):
        write_error(path, type(exc).__name__, str(exc), traceback.format_exc(), int(time.time()))


if __name__ == "__main__":
    main()
