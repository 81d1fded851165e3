"""``TcpStoreServer``: the job's key-value store for torch, served without importing torch.

torch's ``TCPStore`` clients (what gloo forms each world's process group over) speak a small
binary protocol: a query byte, then its arguments — strings and values as a little-endian
``uint64`` length and the bytes, numbers as native integers. The master used to serve it with
torch's own ``TCPStore(is_master=True)``, which made it import torch (~2 s of CPU on every job
start, competing with the workers' own imports); this server speaks the same protocol in
plain Python: one thread per client, one lock over the keys, waits answered by whoever sets
the last key a client waits for. The queries are those of ``c10d::detail::QueryType`` (torch
tests its client against them, ``TestClientProtocol``); the queue queries are refused (the
connection is closed). Every length a client claims is bounded (``api.limits``: a key, a
value, the keys of one query, the bytes of the whole store) and ``ADD`` stays in torch's
64-bit range: a request outside them, or one this server does not speak, closes that client's
connection (logged), never raises out of the server. At most ``MAX_STORE_CLIENTS`` connections
are served at once; one past them is closed as soon as it is accepted (logged once per burst),
and one that sends no whole first request within ``first_request_timeout`` seconds
(``core.training.master_config.StoreConfig``) is closed then, freeing its slot.
Not for anything but torch clients on the master's own address.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
from enum import IntEnum
from typing import BinaryIO

from flexjob.api.errors import MasterError
from flexjob.api.limits import (
    KV_INT_MAX,
    KV_INT_MIN,
    MAX_STORE_CLIENTS,
    MAX_STORE_KEY_BYTES,
    MAX_STORE_QUERY_KEYS,
    MAX_STORE_TOTAL_BYTES,
    MAX_STORE_VALUE_BYTES,
)
from flexjob.core.training.master_config import StoreConfig

log = logging.getLogger(__name__)

#: What a client sends first (``c10d::detail::validationMagicNumber``).
VALIDATION_MAGIC = 0x3C85F7CE


class Query(IntEnum):
    VALIDATE = 0
    SET = 1
    COMPARE_SET = 2
    GET = 3
    ADD = 4
    CHECK = 5
    WAIT = 6
    GETNUMKEYS = 7
    DELETE_KEY = 8
    APPEND = 9
    MULTI_GET = 10
    MULTI_SET = 11
    CANCEL_WAIT = 12
    PING = 13


READY, NOT_READY = b"\x00", b"\x01"  # CheckResponseType
STOP_WAITING, WAIT_CANCELED = b"\x00", b"\x01"  # WaitResponseType


class _Closed(MasterError):
    """The client went away (or sent what this server does not speak)."""


class _Refused(_Closed):
    """The client sent a request outside the store's bounds; ``str()`` says which."""


class _Client:
    """One connection: reads its queries in order; replies may also come from other threads
    (a wait answered by a set), so every write holds ``send_lock``."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.reader: BinaryIO = conn.makefile("rb")
        self.send_lock = threading.Lock()

    def read(self, n: int) -> bytes:
        data = self.reader.read(n)
        if data is None or len(data) < n:
            raise _Closed
        return data

    def u8(self) -> int:
        return self.read(1)[0]

    def u32(self) -> int:
        return int(struct.unpack("<I", self.read(4))[0])

    def u64(self) -> int:
        return int(struct.unpack("<Q", self.read(8))[0])

    def i64(self) -> int:
        return int(struct.unpack("<q", self.read(8))[0])

    def blob(self, limit: int = MAX_STORE_VALUE_BYTES, what: str = "value") -> bytes:
        length = self.u64()
        if length > limit:
            raise _Refused(f"a {what} of {length} bytes, at most {limit}")
        return self.read(length)

    def key(self) -> str:
        return self.blob(MAX_STORE_KEY_BYTES, "key").decode("utf-8", "surrogateescape")

    def count(self) -> int:
        """How many keys (or pairs) a query names, bounded."""
        count = self.u64()
        if count > MAX_STORE_QUERY_KEYS:
            raise _Refused(f"{count} keys in one query, at most {MAX_STORE_QUERY_KEYS}")
        return count

    def keys(self) -> list[str]:
        return [self.key() for _ in range(self.count())]

    def send(self, *parts: bytes) -> None:
        with self.send_lock:
            self.conn.sendall(b"".join(parts))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.shutdown(socket.SHUT_RDWR)
        self.reader.close()
        self.conn.close()


def _blob(value: bytes) -> bytes:
    return struct.pack("<Q", len(value)) + value


class TcpStoreServer:
    """Serves torch ``TCPStore`` clients on the listening socket ``listen_fd`` (owned from
    here on) until ``stop()``, at most ``max_clients`` at once, each given
    ``first_request_timeout`` seconds for its first request (None: ``StoreConfig``'s)."""

    def __init__(
        self,
        listen_fd: int,
        max_clients: int = MAX_STORE_CLIENTS,
        first_request_timeout: float | None = None,
    ) -> None:
        self._listener = socket.socket(fileno=listen_fd)
        self._max_clients = max_clients
        if first_request_timeout is None:
            first_request_timeout = StoreConfig().first_request_timeout
        self._first_request_timeout = first_request_timeout
        self._turned_away = 0  # connections closed at the cap since one was last served
        self._data: dict[str, bytes] = {}
        self._bytes = 0  # of every key and value held
        #: Clients waiting, each with the keys it still waits for.
        self._waiting: dict[_Client, set[str]] = {}
        self._lock = threading.Lock()
        self._clients: set[_Client] = set()
        self._stopped = False
        self._thread = threading.Thread(target=self._accept, name="master-store", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def stop(self) -> None:
        """Stop accepting and close every client connection."""
        with self._lock:
            self._stopped = True
            clients = list(self._clients)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for client in clients:
            client.close()
        self._thread.join(timeout=5.0)

    def abandon(self, prefix: str) -> int:
        """Close the connections of the clients waiting for a key under ``prefix`` (a world
        that broke while its ranks formed their group: the peer they wait for will not come);
        their wait fails now instead of at its timeout. Returns how many."""
        prefix = prefix.lstrip("/")  # torch's clients send keys as "/" + the key

        def under(key: str) -> bool:
            return key.lstrip("/").startswith(prefix)

        with self._lock:
            doomed = [c for c, keys in self._waiting.items() if any(map(under, keys))]
            for client in doomed:
                del self._waiting[client]
        for client in doomed:
            client.close()
        if doomed:
            log.info("store: %d wait(s) under %s given up (their world broke)", len(doomed), prefix)
        return len(doomed)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # stopped
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.settimeout(self._first_request_timeout)  # cleared after its first request
            client = _Client(conn)
            with self._lock:
                if self._stopped:
                    client.close()
                    return
                full = len(self._clients) >= self._max_clients
                if not full:
                    self._clients.add(client)
            if full:
                self._turn_away(client)
                continue
            if self._turned_away:
                log.info(
                    "store: serving again after %d connection(s) turned away", self._turned_away
                )
                self._turned_away = 0
            threading.Thread(
                target=self._serve, args=(client,), name="master-store-client", daemon=True
            ).start()

    def _turn_away(self, client: _Client) -> None:
        """Close a connection past ``max_clients`` (the first of a burst is logged)."""
        if not self._turned_away:
            log.warning(
                "store: %d connections are open, the most served at once; closing new ones",
                self._max_clients,
            )
        self._turned_away += 1
        client.close()

    def _serve(self, client: _Client) -> None:
        try:
            self._query(client, client.u8())
            client.conn.settimeout(None)  # it spoke: from now on it may idle between requests
            while True:
                self._query(client, client.u8())
        except TimeoutError:
            log.warning(
                "store: closing a client that sent no whole first request in %gs",
                self._first_request_timeout,
            )
        except _Refused as exc:
            log.warning("store: closing a client that sent %s", exc)
        except (_Closed, OSError, ValueError):
            pass
        except Exception:  # a bad request closes its connection, never the server
            log.exception("store: closing a client after an unexpected error")
        finally:
            with self._lock:
                self._clients.discard(client)
                self._waiting.pop(client, None)
            client.close()

    def _query(self, client: _Client, query: int) -> None:
        if query == Query.VALIDATE:
            if client.u32() != VALIDATION_MAGIC:
                raise _Closed
        elif query == Query.PING:
            client.send(client.read(4))  # the client's nonce, back
        elif query == Query.SET:
            key, value = client.key(), client.blob()
            with self._lock:
                self._set(key, value)
        elif query == Query.COMPARE_SET:
            key, expected, desired = client.key(), client.blob(), client.blob()
            with self._lock:
                current = self._data.get(key)
                if (current is None and not expected) or current == expected:
                    self._set(key, desired)
                    current = desired
                reply = expected if current is None else current
            client.send(_blob(reply))
        elif query == Query.GET:
            key = client.key()
            with self._lock:
                got = self._data.get(key)
            if got is None:
                raise _Closed  # torch's clients wait for a key before they get it
            client.send(_blob(got))
        elif query == Query.ADD:
            key, delta = client.key(), client.i64()
            with self._lock:
                total = int(self._data.get(key, b"0")) + delta  # ValueError: not a number
                if not KV_INT_MIN <= total <= KV_INT_MAX:
                    raise _Refused(f"an ADD to {key!r} past the 64-bit range")
                self._set(key, str(total).encode())
            client.send(struct.pack("<q", total))
        elif query == Query.CHECK:
            keys = client.keys()
            with self._lock:
                ready = all(k in self._data for k in keys)
            client.send(READY if ready else NOT_READY)
        elif query == Query.WAIT:
            keys = client.keys()
            with self._lock:
                missing = {k for k in keys if k not in self._data}
                if missing:
                    self._waiting[client] = missing
            if not missing:
                client.send(STOP_WAITING)
        elif query == Query.CANCEL_WAIT:
            with self._lock:
                self._waiting.pop(client, None)
            client.send(WAIT_CANCELED)
        elif query == Query.GETNUMKEYS:
            with self._lock:
                count = len(self._data)
            client.send(struct.pack("<q", count))
        elif query == Query.DELETE_KEY:
            key = client.key()
            with self._lock:
                old = self._data.pop(key, None)
                deleted = old is not None
                if old is not None:
                    self._bytes -= len(key) + len(old)
            client.send(struct.pack("<q", int(deleted)))
        elif query == Query.APPEND:
            key, value = client.key(), client.blob()
            with self._lock:
                current = self._data.get(key, b"")
                if len(current) + len(value) > MAX_STORE_VALUE_BYTES:
                    raise _Refused(f"an APPEND making {key!r} over {MAX_STORE_VALUE_BYTES} bytes")
                self._set(key, current + value)
        elif query == Query.MULTI_GET:
            keys = client.keys()
            with self._lock:
                values = [self._data.get(k) for k in keys]
            if any(v is None for v in values):
                raise _Closed
            client.send(*(_blob(v) for v in values if v is not None))
        elif query == Query.MULTI_SET:
            pairs = [(client.key(), client.blob()) for _ in range(client.count())]
            with self._lock:
                for key, value in pairs:
                    self._set(key, value)
        else:
            log.warning("store: query %d is not served; closing the client", query)
            raise _Closed

    def _set(self, key: str, value: bytes) -> None:
        """Store ``key`` and answer the clients whose wait it completes (lock held);
        ``_Refused`` when the store would outgrow ``MAX_STORE_TOTAL_BYTES``."""
        old = self._data.get(key)
        total = self._bytes + len(key) + len(value) - (0 if old is None else len(key) + len(old))
        if total > MAX_STORE_TOTAL_BYTES:
            raise _Refused(
                f"a value making the store {total} bytes, at most {MAX_STORE_TOTAL_BYTES}"
            )
        self._bytes = total
        self._data[key] = value
        done = []
        for client, missing in self._waiting.items():
            missing.discard(key)
            if not missing:
                done.append(client)
        for client in done:
            del self._waiting[client]
            with contextlib.suppress(OSError):
                client.send(STOP_WAITING)
