"""Starting and stopping replica processes on this machine.

A replica is its main container's ``command + args`` run as a child process in its own session
(so that stopping it stops everything it started), with the replica's environment on top of
ours and its output appended to its log file. A small ``sh`` wrapper runs the command and
writes its exit code to the replica's exit file, so the exit survives the process that started
the replica (a restarted operator reads it instead of guessing). A replica with a memory limit
runs in its own memory cgroup (``platform.cgroups``: the wrapper moves itself there before the
command starts, so everything the replica starts is counted), and the wrapper adds
``OOMKilled`` to the exit file when the kernel's OOM killer ended a process there; where no
cgroup can be made, the limit is the ``RLIMIT_AS`` of every process of the replica instead
(virtual memory, per process: a coarser bound). Not here: bookkeeping (``runtime.py``).
"""

import contextlib
import logging
import os
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

import psutil

from flexjob.api.names import SECRET_ENV
from flexjob.core.replicas import OOM_KILLED
from flexjob.platform.cgroups import MemoryCgroup

log = logging.getLogger(__name__)

#: Seconds a replica gets between SIGTERM and SIGKILL (trainers save a checkpoint).
STOP_GRACE_SECONDS = 5.0


#: Runs "$@" (after moving itself into the cgroup whose ``cgroup.procs`` is $1, when given),
#: then writes its exit code (128 + N when killed by signal N) to the file named by $0, followed
#: by " OOMKilled" when the counter file $2 (``memory.oom_control`` / ``memory.events``) counts
#: an OOM kill. SIGTERM/SIGINT/HUP reach the whole process group; the shell only notes them (a
#: trap, so the command keeps default handling) and still waits for the command and records
#: its exit.
EXIT_WRAPPER = (
    "trap : TERM INT HUP; g=$1; e=$2; shift 2; "
    'if [ -n "$g" ]; then echo $$ > "$g" || exit 125; fi; '
    '"$@"; code=$?; r=; '
    'if [ -n "$e" ]; then while read -r k v; do '
    f'[ "$k" = oom_kill ] && [ "$v" != 0 ] && r=" {OOM_KILLED}"; done < "$e"; fi; '
    'echo "$code$r" > "$0"; exit "$code"'
)


def _resolvable(command: str, env: Mapping[str, str], cwd: str | None) -> bool:
    if "/" in command:
        return os.access(Path(cwd or ".") / command, os.X_OK)
    return shutil.which(command, path=env.get("PATH")) is not None


def inherited_env(environ: Mapping[str, str], keep: Collection[str] = ()) -> dict[str, str]:
    """What a replica inherits of ``environ``: all but the services' secrets
    (``names.SECRET_ENV``), except those in ``keep``."""
    drop = set(SECRET_ENV) - set(keep)
    return {k: v for k, v in environ.items() if k not in drop}


def spawn(
    argv: Sequence[str],
    env: Mapping[str, str],
    log_file: Path,
    exit_file: Path,
    cwd: str | None = None,
    cgroup: MemoryCgroup | None = None,
    rlimit_bytes: int | None = None,
    keep_secrets: Collection[str] = (),
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with ``env`` added to this process's environment (less its secrets but
    ``keep_secrets``: ``inherited_env``); output to ``log_file``, its exit code to
    ``exit_file`` (see ``read_exit``), inside ``cgroup`` or under an ``RLIMIT_AS`` of
    ``rlimit_bytes`` when given. OSError when it cannot be started."""
    full_env = {**inherited_env(os.environ, keep_secrets), **env}
    if not argv or not _resolvable(argv[0], full_env, cwd):
        raise OSError(f"{argv[0] if argv else '(empty)'}: command not found")
    log_file.parent.mkdir(parents=True, exist_ok=True)
    exit_file.parent.mkdir(parents=True, exist_ok=True)
    exit_file.unlink(missing_ok=True)
    with log_file.open("ab") as out:
        procs, events = (str(cgroup.procs_file), str(cgroup.oom_file)) if cgroup else ("", "")
        return subprocess.Popen(
            ["/bin/sh", "-c", EXIT_WRAPPER, str(exit_file), procs, events, *argv],
            env=full_env,
            preexec_fn=None if rlimit_bytes is None else _limit_address_space(rlimit_bytes),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def exit_file_of(proc: subprocess.Popen[bytes]) -> Path:
    """The exit file of a replica ``spawn`` started (its wrapper's ``$0``)."""
    args = proc.args
    assert isinstance(args, list)
    return Path(args[3])


def _limit_address_space(limit: int) -> Callable[[], None]:
    def apply() -> None:  # in the child, before exec: inherited by all it starts
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def read_exit(exit_file: Path) -> int | None:
    """The exit code a replica's wrapper recorded; None when it recorded none (it was killed)."""
    try:
        return int(exit_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_reason(exit_file: Path) -> str:
    """Why the replica ended, as its wrapper recorded it (``OOMKilled``), else ``""``."""
    try:
        words = exit_file.read_text().split()
    except OSError:
        return ""
    return words[1] if len(words) > 1 else ""


def exit_code(returncode: int) -> int:
    """Shell-style exit code: killed by signal N reads 128 + N (as Kubernetes reports it)."""
    return 128 - returncode if returncode < 0 else returncode


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def kill_leftovers(pid: int) -> None:
    """Kill what a replica whose process ``pid`` exited left in its process group (as a pod's
    processes end with its main container): no copy outlives its replica."""
    _signal_group(pid, signal.SIGKILL)


def stop_child(proc: subprocess.Popen[bytes], grace: float = STOP_GRACE_SECONDS) -> int:
    """Stop a child we started (and its process group); returns its exit code."""
    if proc.poll() is None:
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
    else:
        _signal_group(proc.pid, signal.SIGKILL)  # leftovers in its group
    assert proc.returncode is not None
    return exit_code(proc.returncode)


def stop_children(
    procs: Sequence[subprocess.Popen[bytes]], grace: float = STOP_GRACE_SECONDS
) -> list[int]:
    """Stop children we started (and their process groups) at once; their exit codes."""
    for proc in procs:
        if proc.poll() is None:
            _signal_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    return [stop_child(p, max(0.0, deadline - time.monotonic())) for p in procs]


def alive(pid: int, created: float | None = None) -> bool:
    """Whether ``pid`` runs (and, given ``created``, is the process started around then)."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return created is None or abs(proc.create_time() - created) < 5.0
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def stop_pid(pid: int, created: float | None = None, grace: float = STOP_GRACE_SECONDS) -> None:
    """Stop a replica process another process started (we cannot wait for it, only poll)."""
    if not alive(pid, created):
        return
    _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.05)
    if alive(pid):
        _signal_group(pid, signal.SIGKILL)
