"""The master's journal is group-committed with ``fsync`` on both of its servers: a call that
hands out a shard answers only after an ``fsync`` that covers its line returned, and the calls
that arrive while one ``fsync`` is in flight all ride one next ``fsync`` (not one each). The
``fsync`` is the real one, held at a gate so that the test sees who waits for it."""

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import flexjob.master.state_file as state_file
from flexjob.core.training.dataset import Dataset
from flexjob.master.main import serve_master
from flexjob.master.service import MasterService
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef
from tests.support.masters import master_config
from tests.support.polling import wait_until

LATE = 5  # calls that arrive while the first call's fsync is in flight


class FsyncGate:
    """``os.fsync`` of the journal, held until ``release``d (one fsync per release): what
    each fsync found in the journal file, in order."""

    def __init__(self, journal: Path) -> None:
        self.journal = str(journal)
        self.synced: list[bytes] = []  # the journal's content at each fsync, once it returned
        self.entered = threading.Semaphore(0)
        self._go = threading.Semaphore(0)
        self._real = os.fsync

    def __call__(self, fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}") != self.journal:  # a directory: not held
            self._real(fd)
            return
        self.entered.release()
        assert self._go.acquire(timeout=30)
        self._real(fd)
        self.synced.append(Path(self.journal).read_bytes())

    def release(self) -> None:
        self._go.release()


@pytest.fixture(params=["threads", "aio"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MasterService]:
    config = master_config(
        "commit",
        tmp_path,
        datasets=(Dataset(size=100, shard_size=1),),
        persistence__fsync=True,
        node_health__heartbeat_timeout=600.0,
        rpc__server=request.param,
    )
    svc = MasterService(config)
    try:
        yield svc
    finally:
        svc.close()


@pytest.fixture
def gate(service: MasterService, monkeypatch: pytest.MonkeyPatch) -> FsyncGate:
    assert service.persistence.state is not None
    service.get_shard(NodeRef("warm-up"), "")  # the epoch opens: a snapshot, before the gate
    held = FsyncGate(service.persistence.state.journal_path)
    monkeypatch.setattr(state_file.os, "fsync", held)
    return held


def _line_of(shard: int, node: str) -> bytes:
    return f'{{"d":"","s":{shard},"w":"{node}","g":1}}\n'.encode()


def test_a_hand_out_answers_after_the_fsync_of_its_line_and_late_calls_share_the_next_one(
    service: MasterService, gate: FsyncGate
) -> None:
    server = serve_master(service, None)
    got: dict[str, int] = {}
    errors: list[BaseException] = []

    def get(node: str) -> None:
        try:
            with MasterClient(server.address, node, timeout=30, shard_stream=False) as client:
                got[node] = client.get_shard().shard_id
        except BaseException as exc:  # asserted in the test's thread
            errors.append(exc)

    try:
        before = service.persistence.mark()
        first = threading.Thread(target=get, args=("first",))
        first.start()
        assert gate.entered.acquire(timeout=30)  # the first call's fsync is in flight
        late = [threading.Thread(target=get, args=(f"late{i}",)) for i in range(LATE)]
        for t in late:
            t.start()
        queued = before + 1 + LATE
        wait_until(lambda: service.persistence.mark() == queued, timeout=30, what="late lines")
        assert not got, "answered while the fsync of the first call's line was in flight"
        gate.release()  # the first fsync returns: the first call answers
        first.join(30)
        assert list(got) == ["first"] and not errors
        assert gate.entered.acquire(timeout=30)  # the next fsync: one, for every late call
        assert list(got) == ["first"], "a late call answered before the fsync of its line"
        gate.release()
        for t in late:
            t.join(30)
    finally:
        for _ in range(LATE + 2):  # nothing left held, whatever failed
            gate.release()
        server.stop(0)
    assert not errors
    assert sorted(got) == sorted(["first", *(f"late{i}" for i in range(LATE))])
    assert len(gate.synced) == 2, "the late calls did not share one fsync"
    for node, shard in got.items():
        assert _line_of(shard, node) in gate.synced[0 if node == "first" else 1]
    assert _line_of(got["late0"], "late0") not in gate.synced[0]
