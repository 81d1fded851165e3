"""Warm spares: an agent started before there is work for it, its workers' imports done.

``flexjob agent --spare`` (``serve_spare``) starts ``--nproc-per-node`` workers through the
bootstrap with ``--warm`` (torch, ``torch._dynamo`` and the trainer helpers imported), and once
they are all ready listens on ``<spare dir>/spare-<pid>.sock``. A later ``flexjob agent``
(``hand_to_spare``; also the agents ``flexjob run`` starts) hands its whole node — its options,
environment, working directory, stdout and stderr (passed as file descriptors) — to a spare
there that runs the same interpreter and flexjob with the same ``--nproc-per-node``, then stays
as its stand-in: it forwards stop signals to the spare and exits with the spare's exit code; a
spare whose caller disappears (killed) dies too, as the node it stands for. With no such spare
it runs the node itself (cold). A spare takes one node and ends with it. Both ends check that
the other runs as the same user (``SO_PEERCRED``): a node brings its environment, tokens
included, and a spare runs whatever script it is handed.
Not for choosing which node joins a world (the master does).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import flexjob
from flexjob.agent.config import AgentConfig
from flexjob.api import names
from flexjob.platform.stop_signals import STOP_SIGNALS, StopRequested, raise_on_stop_signals

log = logging.getLogger(__name__)

SOCKET_PREFIX = "spare-"
#: Seconds a caller waits for a spare's answer to its offer.
ANSWER_TIMEOUT_S = 10.0
#: Exit code of ``flexjob agent`` when the spare that took its node vanished without one.
EXIT_SPARE_LOST = 1


def spare_dir(given: str | None = None) -> Path:
    """Where spares listen: ``given``, else ``$FLEXJOB_SPARE_DIR``, else a directory of this
    user's under the temporary directory."""
    if given:
        return Path(given)
    env = os.environ.get(names.ENV_SPARE_DIR)
    if env:
        return Path(env)
    return Path(tempfile.gettempdir()) / f"flexjob-spares-{os.getuid()}"


def _runtime() -> dict[str, str]:
    """What a spare and its caller must share: the interpreter and the flexjob package."""
    return {"executable": sys.executable, "package": os.path.dirname(flexjob.__file__)}


def _same_user(conn: socket.socket) -> bool:
    """Whether the process at the other end of ``conn`` runs as this user (a spare runs the
    node it is handed with the caller's environment, tokens included)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _read_line(conn: socket.socket, limit: int = 1 << 24) -> str:
    """One ``\\n``-terminated line ("" at end of stream)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1)
        if not chunk:
            return ""
        data += chunk
        if len(data) > limit:
            raise ValueError("line too long")
    return data.decode()


# ---- the caller: `flexjob agent` with a spare there ----
def hand_to_spare(config: AgentConfig, directory: Path) -> int | None:
    """Hand this node to a warm spare in ``directory`` and stand in for it until it ends; its
    exit code, or None when no spare took the node (then run it here)."""
    try:
        candidates = sorted(directory.glob(f"{SOCKET_PREFIX}*.sock"))
    except OSError:
        return None
    offer = json.dumps(
        {
            **_runtime(),
            "config": config.to_dict(),
            "env": dict(os.environ),
            "cwd": os.getcwd(),
        }
    )
    for path in candidates:
        conn = _offer(path, offer)
        if conn is not None:
            return _stand_in(conn)
    return None


def _offer(path: Path, offer: str) -> socket.socket | None:
    """The connection to the spare at ``path`` once it took the offer; None otherwise."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(ANSWER_TIMEOUT_S)
        conn.connect(str(path))
        if not _same_user(conn):
            raise ValueError("the spare runs as another user")
        fds = [sys.stdout.fileno(), sys.stderr.fileno()]
        data = offer.encode() + b"\n"
        sent = socket.send_fds(conn, [data], fds)
        conn.sendall(data[sent:])  # a stream socket may take less at once
        answer = _read_line(conn)
    except (OSError, ValueError) as exc:
        log.debug("spare %s: %s", path, exc)
        conn.close()
        return None
    if not answer.startswith("ok"):
        log.info("spare %s declined: %s", path, answer.strip() or "no answer")
        conn.close()
        return None
    log.info("node handed to the warm spare %s", path)
    conn.settimeout(None)
    return conn


def _stand_in(conn: socket.socket) -> int:
    """Forward stop signals to the spare (through the connection) until it reports its exit
    code."""

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(f"signal {signum}\n".encode())

    for sig in STOP_SIGNALS:
        signal.signal(sig, forward)
    with conn:
        while True:
            try:
                line = _read_line(conn)
            except InterruptedError:
                continue
            except OSError:
                line = ""
            if not line:
                print("flexjob: the warm spare running this node is gone", file=sys.stderr)
                return EXIT_SPARE_LOST
            if line.startswith("exit "):
                return int(line.split()[1])


# ---- the spare: `flexjob agent --spare` ----
@dataclasses.dataclass(frozen=True, slots=True)
class SpareConfig:
    directory: Path
    nproc_per_node: int = 1
    #: Seconds the workers may take to import before the spare gives up.
    ready_timeout: float = 300.0


def serve_spare(spare: SpareConfig) -> int:
    """Start the warm workers, wait for a node to run, run it; its exit code."""
    from flexjob.agent.agent import ElasticAgent  # what the node needs, imported now
    from flexjob.agent.bootstrap import READY_SUFFIX, WARM
    from flexjob.agent.workers import spawn_bootstrap

    spare.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    sock_path = spare.directory / f"{SOCKET_PREFIX}{os.getpid()}.sock"
    procs: list[subprocess.Popen[bytes]] = []
    taken: tuple[socket.socket, dict[str, Any]] | None = None
    ready_files: list[Path] = []
    with raise_on_stop_signals():
        try:
            for i in range(spare.nproc_per_node):
                status = spare.directory / f"{SOCKET_PREFIX}{os.getpid()}.{i}"
                ready_files.append(Path(str(status) + READY_SUFFIX))
                ready_files[-1].unlink(missing_ok=True)
                env = {
                    **os.environ,
                    names.ENV_AGENT_PID: str(os.getpid()),
                    names.ENV_STATUS_FILE: str(status),
                }
                procs.append(spawn_bootstrap(env, (WARM,)))
            if not _wait_warm(procs, ready_files, spare.ready_timeout):
                print("flexjob: a warm spare's worker did not start", file=sys.stderr)
                return 1
            taken = _wait_for_node(sock_path, spare.nproc_per_node)
        except StopRequested as stop:
            return stop.exit_code
        finally:
            sock_path.unlink(missing_ok=True)
            for ready in ready_files:
                ready.unlink(missing_ok=True)
            if taken is None:
                for proc in procs:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                    proc.wait()
    conn, message = taken
    done = threading.Event()
    _become(message, conn, done)
    code = ElasticAgent(AgentConfig.from_dict(message["config"]), warm=procs).run()
    done.set()
    with contextlib.suppress(OSError):
        conn.sendall(f"exit {code}\n".encode())
    conn.close()
    return code


def _wait_warm(
    procs: list[subprocess.Popen[bytes]], ready_files: list[Path], timeout_s: float
) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(proc.poll() is not None for proc in procs):
            return False
        if all(ready.exists() for ready in ready_files):
            return True
        time.sleep(0.05)
    return False


def _wait_for_node(path: Path, nproc: int) -> tuple[socket.socket, dict[str, Any]]:
    """Listen at ``path`` until an offer this spare can take arrives: its connection and
    message (the caller's stdout and stderr already on this process's 1 and 2)."""
    path.unlink(missing_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        path.chmod(0o600)
        listener.listen(8)
        print(f"flexjob: warm spare ready ({nproc} worker(s)): {path}", file=sys.stderr, flush=True)
        while True:
            conn, _ = listener.accept()
            fds: list[int] = []
            try:
                conn.settimeout(ANSWER_TIMEOUT_S)
                message, fds = _receive_offer(conn)
                why = _decline_reason(conn, message, nproc, fds)
                if why is None:
                    conn.sendall(f"ok {os.getpid()}\n".encode())
                    conn.settimeout(None)
                    for target, fd in zip((1, 2), fds, strict=True):
                        os.dup2(fd, target)
                    return conn, message
                conn.sendall(f"no {why}\n".encode())
            except (OSError, ValueError) as exc:
                log.info("spare: a bad offer (%s)", exc)
            finally:
                for fd in fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            conn.close()


def _receive_offer(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 2)
    while not data.endswith(b"\n"):
        more = conn.recv(1 << 20)
        if not more:
            raise ValueError("offer cut short")
        data += more
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError("offer is not an object")
    return message, list(fds)


def _decline_reason(
    conn: socket.socket, message: dict[str, Any], nproc: int, fds: list[int]
) -> str | None:
    if not _same_user(conn):
        return "the caller runs as another user"
    if len(fds) != 2:
        return "no stdout and stderr passed"
    for key, value in _runtime().items():
        if message.get(key) != value:
            return f"another {key}: the spare runs {value}"
    wanted = message.get("config", {}).get("nproc_per_node")
    if wanted != nproc:
        return f"--nproc-per-node {wanted}: the spare has {nproc} worker(s)"
    return None


def _become(message: dict[str, Any], conn: socket.socket, done: threading.Event) -> None:
    """Take on the caller's environment and directory; its stop signals arrive through
    ``conn`` as this process's own, and its end (killed) ends this process too, unless the
    node is ``done``."""
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in message.get("env", {}).items()})
    os.chdir(message["cwd"])

    def relay() -> None:
        while True:
            try:
                line = _read_line(conn)
            except (OSError, ValueError):
                line = ""
            if done.is_set():
                return
            if not line:  # the caller is gone: so is the node it stood for
                os.kill(os.getpid(), signal.SIGKILL)
            if line.startswith("signal "):
                os.kill(os.getpid(), int(line.split()[1]))

    threading.Thread(target=relay, name="flexjob-spare-caller", daemon=True).start()
