from __future__ import annotations

import socket
import time
from multiprocessing.queues import Queue

import torch
import torch.distributed as dist

from flexjob.master.tcp_store import TcpStoreServer
from flexjob.trainer.group import (
    StoreCache,
    abort_group,
    destroy_group,
    form_group,
    is_collective_error,
)
from flexjob.trainer.world import Generation
from tests.support.ranks import local_store, spawned


def test_gloo_peer_errors_are_collective_errors() -> None:
    msg = "[gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:1"
    assert is_collective_error(RuntimeError(msg))
    assert is_collective_error(dist.DistBackendError("x"))


def test_user_errors_are_not_collective_errors() -> None:
    assert not is_collective_error(ValueError("shapes do not match"))
    assert not is_collective_error(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))


def _form_twice(
    address: str, rank: int, fail_first: bool, out: Queue[str], lonely_timeout: float = 2.0
) -> None:
    """In a fresh process: optionally fail to form a 2-rank world alone (within
    ``lonely_timeout``), then form one with the peer and all-reduce; puts "ok <sum>" or the
    error on ``out``."""
    stores = StoreCache(30.0)
    try:
        if fail_first:
            lonely = Generation(1, rank, 2, address, "job/round-1/")
            try:
                form_group(lonely, rank, 2, stores, lonely_timeout)
            except Exception as exc:
                if not is_collective_error(exc):
                    raise
                out.put("round 1 failed")
        gen = Generation(2, rank, 2, address, "job/round-2/")
        form_group(gen, rank, 2, stores, 20.0)
        t = torch.ones(1)
        dist.all_reduce(t)
        out.put(f"ok {int(t.item())}")
        destroy_group()
    except Exception as exc:
        out.put(f"{type(exc).__name__}: {exc}"[:300])


def test_a_rank_whose_world_failed_to_form_joins_the_next_world() -> None:
    """A rank that timed out forming a world (its peer was stopped) and then forms the next
    one with a fresh peer uses the same store keys as that peer (torch's group name is reset)."""
    _store, address = local_store()
    with spawned() as ranks:
        out = ranks.queue()
        first = ranks.process(_form_twice, address, 0, True, out)
        second = ranks.process(_form_twice, address, 1, False, out)
        first.start()
        time.sleep(0.1)
        second.start()
        results = [out.get(timeout=90) for _ in range(3)]
    assert results == ["round 1 failed", "ok 2", "ok 2"], results


def test_a_rank_forming_a_world_that_broke_is_freed_by_the_master_store() -> None:
    """The peer of round 1 never comes (it died while the world formed): the master's store
    closes the waits under round 1's prefix, so the rank's forming fails now, not after its
    300 s timeout, and the rank forms round 2 over a new connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    server = TcpStoreServer(listener.detach())
    address = f"127.0.0.1:{server.port}"
    try:
        with spawned() as ranks:
            out = ranks.queue()
            first = ranks.process(_form_twice, address, 0, True, out, 300.0)
            first.start()
            second = ranks.process(_form_twice, address, 1, False, out)
            deadline = time.monotonic() + 60
            while not server.abandon("job/round-1/") and time.monotonic() < deadline:
                time.sleep(0.05)  # until rank 0 waits for its round-1 peer
            assert out.get(timeout=30) == "round 1 failed"
            second.start()
            results = [out.get(timeout=60) for _ in range(2)]
    finally:
        server.stop()
    assert results == ["ok 2", "ok 2"], results


def _blocked_or_aborting(address: str, rank: int, out: Queue[str], done: Queue[str]) -> None:
    """Rank 0 waits in an all-reduce that rank 1 never enters; rank 1 aborts the group, says
    how many connections it shut down, and stays alive until told to go."""
    stores = StoreCache(30.0)
    try:
        form_group(Generation(1, rank, 2, address, "job/round-1/"), rank, 2, stores, 300.0)
        dist.all_reduce(torch.ones(1))  # both connected
        if rank == 0:
            try:
                dist.all_reduce(torch.ones(1))
                out.put("0 all-reduce returned")
            except Exception as exc:
                out.put(f"0 collective error={is_collective_error(exc)}")
        else:
            out.put(f"1 shut down {abort_group()}")
            done.get(timeout=120)
        destroy_group()
    except Exception as exc:
        out.put(f"{rank} {type(exc).__name__}: {exc}"[:300])


def test_an_aborting_rank_wakes_a_peer_blocked_in_a_collective() -> None:
    """gloo has no abort that wakes a collective: a rank whose world broke shuts down its
    connections (not its listener), and a peer waiting for it fails at once, long before
    its collective timeout (300 s here), while the aborting rank is still alive."""
    _store, address = local_store()
    with spawned() as ranks:
        out, done = ranks.queue(), ranks.queue()
        procs = [ranks.process(_blocked_or_aborting, address, r, out, done) for r in (0, 1)]
        for p in procs:
            p.start()
        try:
            results = sorted(out.get(timeout=90) for _ in procs)
            alive = procs[1].is_alive()
        finally:
            done.put("go")
    assert results == ["0 collective error=True", "1 shut down 1"], results
    assert alive
