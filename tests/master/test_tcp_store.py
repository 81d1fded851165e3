"""The master's own TCPStore server (``master.tcp_store``) against torch's real clients: every
query a client makes, a wait that times out, and a gloo process group formed over it."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import timedelta

import pytest

from flexjob.master.tcp_store import TcpStoreServer


@pytest.fixture
def server() -> Iterator[TcpStoreServer]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    store = TcpStoreServer(listener.detach())
    yield store
    store.stop()


def _client(port: int, timeout_s: float = 10.0):  # type: ignore[no-untyped-def]
    import torch.distributed as dist

    return dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=timeout_s))


def test_torch_clients_get_what_other_clients_set(server: TcpStoreServer) -> None:
    import torch.distributed as dist

    a, b = _client(server.port), _client(server.port)
    a.set("k", "v1")
    assert b.get("k") == b"v1"
    assert a.add("n", 5) == 5
    assert b.add("n", -2) == 3
    assert a.get("n") == b"3"
    assert a.check(["k", "n"]) is True
    assert a.check(["k", "absent"]) is False
    assert b.compare_set("k", "v1", "v2") == b"v2"
    assert b.compare_set("k", "wrong", "v3") == b"v2"  # unchanged: the current value
    assert a.compare_set("fresh", "", "first") == b"first"
    a.append("log", "ab")
    a.append("log", "cd")
    # torch sends APPEND without waiting for an answer: read on the same connection first (the
    # server answers a connection's requests in order), then the other client sees both.
    assert a.get("log") == b"abcd"
    assert b.get("log") == b"abcd"
    a.multi_set(["x", "y"], ["1", "2"])
    assert b.multi_get(["y", "x"]) == [b"2", b"1"]
    assert a.num_keys() == 6  # k n fresh log x y
    assert a.delete_key("x") is True
    assert a.delete_key("x") is False
    prefixed = dist.PrefixStore("round-1/", b)
    prefixed.set("rank0", "addr")
    assert dist.PrefixStore("round-1/", a).get("rank0") == b"addr"


def test_a_wait_ends_when_another_client_sets_the_last_key(server: TcpStoreServer) -> None:
    import threading

    waiter, setter = _client(server.port), _client(server.port)
    setter.set("first", "1")
    done = threading.Event()

    def wait() -> None:
        waiter.wait(["first", "second"], timedelta(seconds=20))
        done.set()

    thread = threading.Thread(target=wait)
    thread.start()
    assert not done.wait(0.3)  # "second" is not there yet
    setter.set("second", "2")
    thread.join(20)
    assert done.is_set()


def test_a_wait_that_times_out_raises_and_the_client_still_works(
    server: TcpStoreServer,
) -> None:
    client = _client(server.port)
    with pytest.raises(Exception, match=r"(?i)timeout|timed out"):
        client.wait(["never"], timedelta(milliseconds=300))
    client.set("after", "ok")  # the cancelled wait left the connection usable
    assert client.get("after") == b"ok"


def test_a_client_with_the_wrong_handshake_is_dropped(server: TcpStoreServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        raw.sendall(b"\x00" + (12345).to_bytes(4, "little"))
        assert raw.recv(1) == b""  # closed by the server
    assert _client(server.port).add("still-serving", 1) == 1


GLOO = textwrap.dedent(
    """
    import sys
    from datetime import timedelta
    import torch, torch.distributed as dist
    rank, port = int(sys.argv[1]), int(sys.argv[2])
    store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=60))
    dist.init_process_group("gloo", store=dist.PrefixStore("r1/", store), rank=rank,
                            world_size=2, timeout=timedelta(seconds=60))
    t = torch.tensor([rank + 1.0])
    dist.all_reduce(t)
    dist.barrier()
    print(int(t.item()), flush=True)
    dist.destroy_process_group()
    """
)


def test_gloo_forms_a_process_group_over_it(server: TcpStoreServer) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", GLOO, str(rank), str(server.port)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for rank in range(2)
    ]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outs == ["3", "3"]  # 1 + 2 on both ranks
