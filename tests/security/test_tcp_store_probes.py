"""Hostile clients of the job's TCPStore server (torch's wire protocol, no token): a claimed
length past the bounds, an ADD past 64 bits, a count of keys no query needs, an unknown query,
a wrong magic number. Each closes that client's connection and nothing else: no exception
escapes a server thread, the keys are as they were and the next client is served."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from flexjob.api.limits import MAX_STORE_CLIENTS
from flexjob.core.training.master_config import MasterConfig, StoreConfig
from flexjob.master.tcp_store import VALIDATION_MAGIC, Query, TcpStoreServer
from tests.support.polling import wait_until

U64_MAX = 2**64 - 1
INT64_MAX = 2**63 - 1


def blob(data: bytes) -> bytes:
    return struct.pack("<Q", len(data)) + data


def claimed(length: int) -> bytes:
    """A length prefix of ``length`` bytes that never come."""
    return struct.pack("<Q", length)


def q(query: Query | int) -> bytes:
    return bytes([int(query)])


class StoreClient:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.sendall(q(Query.VALIDATE) + struct.pack("<I", VALIDATION_MAGIC))

    def exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    def set(self, key: str, value: bytes) -> None:
        self.sock.sendall(q(Query.SET) + blob(key.encode()) + blob(value))

    def get(self, key: str) -> bytes:
        self.sock.sendall(q(Query.GET) + blob(key.encode()))
        (length,) = struct.unpack("<Q", self.exact(8))
        return self.exact(length)

    def num_keys(self) -> int:
        self.sock.sendall(q(Query.GETNUMKEYS))
        return int(struct.unpack("<q", self.exact(8))[0])

    def closed_by_server(self) -> bool:
        """Whether the server closed this connection (reads end, or reset)."""
        return _closed(self.sock)

    def close(self) -> None:
        self.sock.close()


def serve(
    monkeypatch: pytest.MonkeyPatch,
    max_clients: int = MAX_STORE_CLIENTS,
    first_request_timeout: float | None = None,
) -> tuple[TcpStoreServer, list[object]]:
    """A server on a free local port, and the exceptions that escape its threads."""
    escaped: list[object] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append(args.exc_value))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    server = TcpStoreServer(listener.detach(), max_clients, first_request_timeout)
    return server, escaped


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TcpStoreServer, list[object]]]:
    server, escaped = serve(monkeypatch)
    seed = StoreClient(server.port)
    seed.set("/world/rank_0", b"127.0.0.1:29500")
    seed.set("/world/count", b"7")
    assert seed.num_keys() == 2  # answered after the sets: they are in
    seed.close()
    yield server, escaped
    server.stop()


def books(port: int) -> tuple[int, bytes, bytes]:
    client = StoreClient(port)
    try:
        return client.num_keys(), client.get("/world/rank_0"), client.get("/world/count")
    finally:
        client.close()


def key(name: str) -> bytes:
    return blob(name.encode())


PROBES = {
    "key of 2^40 claimed bytes": q(Query.SET) + claimed(2**40),
    "key of 2^64-1 claimed bytes": q(Query.GET) + claimed(U64_MAX),
    "value of 2^40 claimed bytes": q(Query.SET) + key("/k") + claimed(2**40),
    "value of 2^63 claimed bytes": q(Query.APPEND) + key("/k") + claimed(2**63),
    "compare-set expecting 2^40 bytes": q(Query.COMPARE_SET) + key("/k") + claimed(2**40),
    "add past int64": q(Query.ADD) + key("/world/count") + struct.pack("<q", INT64_MAX),
    "add to a non-number": q(Query.ADD) + key("/world/rank_0") + struct.pack("<q", 1),
    "check of 2^40 keys": q(Query.CHECK) + claimed(2**40),
    "wait for 2^63 keys": q(Query.WAIT) + claimed(2**63),
    "multi-get of 2^40 keys": q(Query.MULTI_GET) + claimed(2**40),
    "multi-set of 2^40 pairs": q(Query.MULTI_SET) + claimed(2**40),
    "get of a missing key": q(Query.GET) + key("/nobody"),
    "an unknown query": q(200),
    "a queue query": q(14),
    "a wrong magic number": q(Query.VALIDATE) + struct.pack("<I", 0xDEADBEEF),
    "a truncated value": q(Query.SET) + key("/k") + claimed(100) + b"only ten b",
}


@pytest.mark.parametrize("request_bytes", PROBES.values(), ids=PROBES.keys())
def test_a_bad_request_closes_its_connection_and_nothing_else(
    store: tuple[TcpStoreServer, list[object]], request_bytes: bytes
) -> None:
    server, escaped = store
    before = books(server.port)
    hostile = StoreClient(server.port)
    hostile.sock.sendall(request_bytes)
    if request_bytes.endswith(b"only ten b"):
        hostile.sock.shutdown(socket.SHUT_WR)  # the rest never comes
    assert hostile.closed_by_server()
    hostile.close()
    assert escaped == []
    assert books(server.port) == before


def _served(port: int) -> bool:
    """Whether a new client gets answers (not closed at the connection cap)."""
    client = StoreClient(port)
    try:
        return client.num_keys() == 1
    except (ConnectionError, OSError):
        return False
    finally:
        client.close()


def test_connections_past_the_cap_are_closed_and_those_served_keep_working(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, escaped = serve(monkeypatch, max_clients=4)
    held = [StoreClient(server.port) for _ in range(4)]
    try:
        held[0].set("/k", b"v")
        assert [c.num_keys() for c in held] == [1] * 4  # each one served
        hostile = [StoreClient(server.port) for _ in range(3)]
        assert all(c.closed_by_server() for c in hostile)
        for c in hostile:
            c.close()
        assert [c.get("/k") for c in held] == [b"v"] * 4  # the served ones undisturbed
        held.pop().close()
        wait_until(lambda: _served(server.port), timeout=30, what="a freed slot serves again")
        assert escaped == []
    finally:
        for c in held:
            c.close()
        server.stop()


def _closed(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (its reads end, or reset) within its timeout."""
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def test_a_silent_or_half_sent_first_request_is_closed_and_frees_its_slot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, escaped = serve(monkeypatch, max_clients=3, first_request_timeout=0.5)
    normal = StoreClient(server.port)
    hostile: list[socket.socket] = []
    try:
        normal.set("/k", b"v")
        assert normal.num_keys() == 1
        silent = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        half = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        hostile += [silent, half]
        half.sendall(q(Query.VALIDATE) + struct.pack("<I", VALIDATION_MAGIC)[:2])
        assert _closed(silent), "a connection that sends nothing is held open"
        assert _closed(half), "a connection that sends half a request is held open"
        # Their slots are free again: the cap (3) serves new clients once more.
        wait_until(lambda: _served(server.port), timeout=30, what="the freed slots to serve")
        # The client that spoke first idled past the timeout too, and is served on.
        assert normal.get("/k") == b"v" and normal.num_keys() == 1
        assert escaped == []
    finally:
        for sock in hostile:
            sock.close()
        normal.close()
        server.stop()


def test_the_first_request_timeout_is_a_master_setting_with_a_bound() -> None:
    assert MasterConfig().store.first_request_timeout == StoreConfig().first_request_timeout
    with pytest.raises(ValueError, match="first_request_timeout must be > 0 seconds, got 0"):
        MasterConfig().with_overrides(store__first_request_timeout=0)
