"""Which TCPStore the master serves: flexjob's (``master.tcp_store``, no torch import) when it
speaks the installed torch's protocol, else torch's own ``TCPStore``.

flexjob's server speaks torch's private wire protocol; a torch that changed it would break
every job at its first rendezvous. So at start the master checks, once per torch version (and
version of flexjob's server), with torch's own client: a subprocess (the master itself never
imports torch for it) runs every query the workers use against a flexjob server on loopback.
The answer is cached in the temporary directory, so only the first master per machine and
torch pays for the check (~1-2 s of a torch import); ``choose_store`` logs which store it
serves and why. Not for the protocol itself (``master.tcp_store``).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from flexjob.master import tcp_store
from flexjob.master.tcp_store import TcpStoreServer

log = logging.getLogger(__name__)

#: Seconds the check may take (a torch import on a loaded machine, then a few round trips).
CHECK_TIMEOUT_S = 120.0

#: What the check runs with torch's client against flexjob's server at ``argv[1]:argv[2]``:
#: every query a worker's c10d, gloo and flexjob's trainer send; prints ``ok`` when all
#: answered as torch's own server would.
PROBE = r"""
import datetime, sys
from torch.distributed import PrefixStore, TCPStore
store = TCPStore(sys.argv[1], int(sys.argv[2]), is_master=False,
                 timeout=datetime.timedelta(seconds=30))
p = PrefixStore("probe/", store)
p.set("a", b"1")
assert p.get("a") == b"1", "get"
assert p.add("n", 2) == 2 and p.add("n", 3) == 5, "add"
assert p.compare_set("c", b"", b"x") == b"x", "compare_set new"
assert p.compare_set("c", b"x", b"y") == b"y", "compare_set swap"
assert p.compare_set("c", b"z", b"w") == b"y", "compare_set miss"
assert p.check(["a"]) and not p.check(["none"]), "check"
p.wait(["a"])
p.wait(["a"], datetime.timedelta(seconds=5))
p.append("l", b"x"); p.append("l", b"y")
assert p.get("l") == b"xy", "append"
p.multi_set(["m1", "m2"], [b"1", b"2"])
assert p.multi_get(["m1", "m2"]) == [b"1", b"2"], "multi_get"
assert p.delete_key("a") and not p.check(["a"]), "delete_key"
assert store.num_keys() >= 4, "num_keys"
print("ok", flush=True)
"""


@dataclass(frozen=True, slots=True)
class StoreChoice:
    """Whether flexjob's server is served (``ours``) and why (for the log)."""

    ours: bool
    why: str


class StoreServer(Protocol):
    """What the master needs of its store: its port, ``abandon`` a broken world's waits,
    ``stop``."""

    @property
    def port(self) -> int: ...

    def abandon(self, prefix: str) -> int: ...

    def stop(self) -> None: ...


class TorchStoreServer:
    """torch's own ``TCPStore(is_master=True)`` on the listening socket ``listen_fd`` (which
    it owns from here on). It has no connection cap (``TCPStore`` takes none: host, port,
    world size, timeouts, ``multi_tenant``, ``master_listen_fd``, ``use_libuv``), unlike
    ``master.tcp_store`` (``api.limits.MAX_STORE_CLIENTS``): only a torch whose protocol that
    server does not speak gets it."""

    def __init__(self, listen_fd: int, host: str) -> None:
        from torch.distributed import TCPStore  # type: ignore[attr-defined]

        with socket.socket(fileno=os.dup(listen_fd)) as sock:
            self._port = sock.getsockname()[1]
        self._store: Any = TCPStore(
            host,
            self._port,
            is_master=True,
            wait_for_workers=False,
            master_listen_fd=listen_fd,
            timeout=datetime.timedelta(seconds=300),
        )

    @property
    def port(self) -> int:
        return int(self._port)

    def abandon(self, prefix: str) -> int:
        """torch's server cannot end chosen waits: the broken world's ranks wait out their
        timeout."""
        return 0

    def stop(self) -> None:
        self._store = None  # torch's server (and the socket it owns) ends with it


def torch_version() -> str | None:
    """The installed torch's version (from its metadata: torch is not imported), or None."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def _server_digest() -> str:
    """Changes with flexjob's server code: a new one is checked again."""
    return hashlib.sha256(Path(tcp_store.__file__).read_bytes()).hexdigest()[:16]


def run_check(timeout_s: float = CHECK_TIMEOUT_S) -> str | None:
    """Run ``PROBE`` (torch's client) against a fresh flexjob server on loopback; None when
    every query was answered right, else what went wrong."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(socket.SOMAXCONN)
        port = listener.getsockname()[1]
        server = TcpStoreServer(listener.detach())
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, "127.0.0.1", str(port)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return f"torch's client got no answers within {timeout_s:g} s"
    finally:
        server.stop()
    if done.returncode == 0 and done.stdout.strip() == "ok":
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"torch's client exited {done.returncode}"


def cache_path(version: str, directory: Path | None = None) -> Path:
    base = directory or Path(tempfile.gettempdir()) / f"flexjob-store-check-{os.getuid()}"
    return base / f"torch-{version}-{_server_digest()}.json"


def choose_store(directory: Path | None = None, check: Any = run_check) -> StoreChoice:
    """flexjob's server unless the installed torch's client failed the check (``check``:
    returns None or the problem; cached under ``directory``, default the temporary
    directory)."""
    version = torch_version()
    if version is None:
        return StoreChoice(True, "torch is not installed here, so not checked")
    path = cache_path(version, directory)
    with contextlib.suppress(OSError, ValueError, TypeError):
        return StoreChoice(**json.loads(path.read_text()))
    problem = check()
    if problem is None:
        choice = StoreChoice(True, f"torch {version}'s TCPStore client passed the check")
    else:
        choice = StoreChoice(False, f"torch {version}'s client failed flexjob's: {problem}")
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(choice)))
        os.replace(tmp, path)
    return choice


def serve_store(
    listen_fd: int, host: str, choice: StoreChoice, first_request_timeout: float | None = None
) -> StoreServer:
    """The store ``choice`` names, on ``listen_fd``; logs which and why. flexjob's closes a
    connection that sends no whole first request in ``first_request_timeout`` seconds."""
    if choice.ours:
        log.info("event=store_kind kind=flexjob why=%r", choice.why)
        return TcpStoreServer(listen_fd, first_request_timeout=first_request_timeout)
    log.warning("event=store_kind kind=torch why=%r", choice.why)
    return TorchStoreServer(listen_fd, host)
