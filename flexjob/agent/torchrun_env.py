"""The part of torchrun's worker contract an agent sets when it starts a worker, and the
error file it reads back when one fails.

torchrun gives every worker ``TORCHELASTIC_RUN_ID``, ``TORCHELASTIC_RESTART_COUNT``,
``TORCHELASTIC_MAX_RESTARTS``, ``TORCHELASTIC_ERROR_FILE``, ``ROLE_NAME`` and (with several
workers a node) ``OMP_NUM_THREADS=1``; the per-world rest (``RANK``, ``GROUP_RANK``,
``ROLE_RANK``, ...) is ``trainer.world.world_env``. A worker whose entry point is wrapped in
torch's ``@record`` (or any uncaught exception, which ``agent.bootstrap`` records itself) leaves
its error in ``TORCHELASTIC_ERROR_FILE`` in torch's JSON form; ``error_message`` reads it for
the root cause, and ``permanent`` says whether a restart could ever fix it. Not for deciding to
restart (the agent does) nor for the ranks (``trainer.world``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from flexjob.api import names

#: torchrun's notice when it sets OMP_NUM_THREADS for several workers of a node.
OMP_NOTICE = (
    "\n*****************************************\n"
    "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to "
    "avoid your system being overloaded, please further tune the variable for optimal "
    "performance in your application as needed. \n"
    "*****************************************"
)

#: Exceptions that end a worker the same way on every restart: its code or its environment
#: is wrong (a SyntaxError's subclasses IndentationError and TabError included).
PERMANENT_ERRORS = ("ModuleNotFoundError", "SyntaxError", "IndentationError", "TabError")


def sets_omp_threads(nproc_per_node: int, given: Mapping[str, str]) -> bool:
    """torchrun's rule: OMP_NUM_THREADS=1 when a node runs several workers and the user set
    none."""
    return nproc_per_node > 1 and names.ENV_OMP_NUM_THREADS not in given


def launch_env(
    *,
    run_id: str,
    max_restarts: int,
    restart_count: int,
    error_file: str,
    nproc_per_node: int,
    given: Mapping[str, str],
) -> dict[str, str]:
    """What a worker gets at its start, beside its world (``given``: the environment it
    inherits, which keeps a user's own OMP_NUM_THREADS)."""
    env = {
        names.ENV_TORCHELASTIC_RUN_ID: run_id,
        names.ENV_TORCHELASTIC_RESTART_COUNT: str(restart_count),
        names.ENV_TORCHELASTIC_MAX_RESTARTS: str(max_restarts),
        names.ENV_TORCHELASTIC_ERROR_FILE: error_file,
        names.ENV_ROLE_NAME: names.ROLE_NAME,
    }
    if sets_omp_threads(nproc_per_node, given):
        env[names.ENV_OMP_NUM_THREADS] = "1"
    return env


def error_path(status_file: Path) -> Path:
    """The worker's TORCHELASTIC_ERROR_FILE: beside its status file, one per process."""
    return status_file.with_name(status_file.name.removesuffix(".status.json") + ".error.json")


def error_message(path: Path) -> str | None:
    """The error a worker recorded in torch's error-file form (``{"message": {"message":
    "Type: text", "extraInfo": {...}}}``, or ``{"message": "text"}``); None when it wrote
    none or the file is not that form."""
    try:
        data = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return None
    message = data.get("message") if isinstance(data, dict) else None
    if isinstance(message, dict):
        message = message.get("message")
    return message if isinstance(message, str) and message else None


#: A framework's refusal of the world it was given: Lightning's ``TorchElasticEnvironment``
#: when ``devices * num_nodes`` is not ``WORLD_SIZE``. The script asks for a fixed size, so
#: every restart into a world of the same size fails the same way.
_LIGHTNING_WORLD = re.compile(
    r"devices=(?P<devices>\d+)`? and `?num_nodes=(?P<nodes>\d+)`? in Lightning.*"
    r"does not match the world size \((?P<world>\d+)\)"
)


def world_mismatch(message: str | None) -> str | None:
    """One line naming what the script's framework asks for and the world the run gives, when
    the recorded error is a framework refusing the world's size; None otherwise."""
    found = _LIGHTNING_WORLD.search(message or "")
    if found is None:
        return None
    devices, nodes, world = (int(found[k]) for k in ("devices", "nodes", "world"))
    return (
        f"the script asks for {devices * nodes} processes (Lightning: devices={devices} x "
        f"num_nodes={nodes}), but this run's world has {world} (its nodes x --nproc-per-node): "
        "make them match"
    )


def permanent(message: str | None) -> bool:
    """Whether the recorded error is one a restart cannot fix (``PERMANENT_ERRORS``, or a
    framework refusing the world's size: ``world_mismatch``)."""
    if not message:
        return False
    kind = message.split(":", 1)[0].strip().rsplit(".", 1)[-1]
    return kind in PERMANENT_ERRORS or world_mismatch(message) is not None


def explained(message: str) -> str:
    """A recorded error as the root cause shows it: a world mismatch as its one line."""
    return world_mismatch(message) or message


def write_error(path: str, kind: str, text: str, callstack: str, timestamp: int) -> None:
    """Record an error as torch's ``ErrorHandler.record_exception`` does, unless the worker
    (``@record``) already did: the first record is the one the agent reads."""
    if os.path.exists(path):
        return
    body = {
        "message": {
            "message": f"{kind}: {text}",
            "extraInfo": {"py_callstack": callstack, "timestamp": str(timestamp)},
        }
    }
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(body, f)
    os.replace(tmp, path)
