"""Whether the training script (or module) exists, checked before anything starts, and
whether its workers should import torch before the node joins.

A missing script can never fix itself, so ``flexjob run`` and ``flexjob agent`` stop at once
with one message and exit 127 (the shell's "not found"), which the operator never retries
(``core.operator.phases.NOT_RUNNABLE_EXIT_CODES``). Not for running the script
(``agent.bootstrap``).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys

from flexjob.api import names

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


def preimport_torch(target: str, module: bool, env: dict[str, str], cwd: str | None = None) -> bool:
    """Whether the workers import torch before the node joins (``agent.bootstrap``): always
    with ``FLEXJOB_PREIMPORT_TORCH=1``, never with ``0``; otherwise (``auto``) unless the
    script imports nothing but the standard library (it cannot use torch, so importing it would
    only slow its start). A module, or a script that cannot be read or parsed, imports it."""
    setting = env.get(names.ENV_PREIMPORT_TORCH, "auto").strip().lower()
    if setting not in ("0", "1", "auto"):
        raise ValueError(f"{names.ENV_PREIMPORT_TORCH} must be 0, 1 or auto, got {setting!r}")
    if setting != "auto":
        return setting == "1"
    if module:
        return True
    try:
        with open(os.path.join(cwd or os.getcwd(), target), encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return True
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".", 1)[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module.split(".", 1)[0])
    return not imported <= sys.stdlib_module_names
