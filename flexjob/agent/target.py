"""Whether the training script (or module) exists, checked before anything starts.

A missing script can never fix itself, so ``flexjob run`` and ``flexjob agent`` stop at once
with one message and exit 127 (the shell's "not found"), which the operator never retries
(``core.phases.NOT_RUNNABLE_EXIT_CODES``). Not for running the script (``agent.bootstrap``).
"""

from __future__ import annotations

import importlib.util
import os

#: Exit code of ``flexjob run`` / ``flexjob agent`` when the script or module is not there.
EXIT_NOT_FOUND = 127


def target_problem(target: str, module: bool, cwd: str | None = None) -> str | None:
    """Why ``target`` cannot run (relative paths from ``cwd``, default: here), or None."""
    where = cwd or os.getcwd()
    if not module:
        if os.path.isfile(os.path.join(where, target)):
            return None
        return f"script not found: {target} (looked in {where})"
    top = target.split(".", 1)[0]
    if not top.isidentifier():
        return f"-m {target}: not a module name"
    try:
        found = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        found = False
    if found or os.path.exists(os.path.join(where, top)):
        return None
    return f"module not found: {target} (looked in {where} and the Python path)"
