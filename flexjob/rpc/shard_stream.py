"""``ShardStream``: one training process's ``LeaseShardsStream`` to the master.

A message on an open stream costs the master's gRPC server about 0.6x the CPU of a unary call
(``benchmarks/master_load.py``), and a trainer's shard calls come one at a time, so a
``MasterClient`` sends its ``lease_shards`` over one stream while it can: each request waits for
its own reply before the next is sent, so the master answers them in order, each saved before
its reply, exactly as the unary calls. When the stream cannot serve a request, the caller sends
it as a unary ``LeaseShards`` instead (``StreamRefused``: the master holds no more streams or
does not know the method, nothing was read; ``StreamBroken``: the master went away or did not
answer within the timeout, so the request may or may not have been applied, and the unary call's
retry is the same resend a unary call's own retry would be: reports are idempotent). An error the
master answers is raised as a unary call's would be (``rpc.retry.answered_error``).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from flexjob.api.errors import WireError
from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.retry import answered_error

#: Seconds a client waits before it asks again for a stream the master refused.
REFUSED_RETRY_S = 30.0

_REFUSED = frozenset({grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNIMPLEMENTED})


class StreamRefused(WireError):
    """The master did not take the stream; no request of it was read."""


class StreamBroken(WireError):
    """The stream ended without a reply to the last request (which may have been applied)."""


class ShardStream:
    """An open ``LeaseShardsStream``: ``ask`` sends one request and returns its reply. Used by
    one caller at a time. ``open_call(requests)`` opens the call; a reply that takes more than
    ``timeout`` seconds cancels it (``StreamBroken``). A failed stream is closed: open a new one."""

    def __init__(
        self, open_call: Callable[[Iterator[pb.LeaseShardsRequest]], Any], timeout: float
    ) -> None:
        self._requests: queue.SimpleQueue[pb.LeaseShardsRequest | None] = queue.SimpleQueue()
        self._timeout = timeout
        self._asked_at = 0.0  # when the request now in flight was sent (0: none)
        self._closed = threading.Event()
        self._replies = open_call(iter(self._requests.get, None))
        self._watch = threading.Thread(target=self._watchdog, name="shard-stream", daemon=True)
        self._watch.start()

    def ask(self, request: pb.LeaseShardsRequest) -> pb.LeaseShardsResponse:
        """The master's reply; ``StreamRefused``, ``StreamBroken`` or the answered error's
        ``api.errors`` kind when there is none (the stream is closed then)."""
        self._asked_at = time.monotonic()
        try:
            self._requests.put(request)
            reply: pb.LeaseShardsResponse = next(self._replies)
            return reply
        except StopIteration:
            self.close()
            raise StreamBroken("the master ended the shard stream") from None
        except grpc.RpcError as exc:
            self.close()
            code = exc.code()
            if code in _REFUSED:
                raise StreamRefused(f"{code.name}: {exc.details()}") from None
            # CANCELLED: our watchdog or the master's stop; the rest as a unary call's error
            answered = None if code == grpc.StatusCode.CANCELLED else answered_error(exc)
            if answered is None:
                raise StreamBroken(f"{code.name}: {exc.details()}") from None
            raise answered from None
        finally:
            self._asked_at = 0.0

    def close(self) -> None:
        """End the stream (idempotent)."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._requests.put(None)
        self._replies.cancel()

    def _watchdog(self) -> None:
        """Cancel the call when a reply is overdue (a master that hangs, not one that died:
        its connection's end breaks the stream at once)."""
        while not self._closed.wait(self._timeout / 4):
            asked = self._asked_at
            if asked and time.monotonic() - asked > self._timeout:
                self._replies.cancel()


class StreamHolder:
    """A client's shard stream, opened on first use and again after it broke; ``None`` from
    ``ask`` means "send it as a unary call" (the stream is busy with another thread, refused
    recently, or failed on this request)."""

    def __init__(self, open_stream: Callable[[], ShardStream], enabled: bool = True) -> None:
        self._open = open_stream
        self._enabled = enabled
        self._lock = threading.Lock()
        self._stream: ShardStream | None = None
        self._refused_until = 0.0

    def ask(self, request: pb.LeaseShardsRequest) -> pb.LeaseShardsResponse | None:
        if not self._enabled or not self._lock.acquire(blocking=False):
            return None
        try:
            if self._stream is None:
                if time.monotonic() < self._refused_until:
                    return None
                self._stream = self._open()
            try:
                return self._stream.ask(request)
            except StreamRefused:
                self._stream = None
                self._refused_until = time.monotonic() + REFUSED_RETRY_S
                return None
            except StreamBroken:
                self._stream = None
                return None
            except Exception:
                self._stream = None
                raise
        finally:
            self._lock.release()

    def close(self) -> None:
        with self._lock:
            if self._stream is not None:
                self._stream.close()
                self._stream = None
