"""The master's aio server saves before it answers: with calls from many threads at once, with
``fsync`` (every call's lines go through its writer thread, group-committed) or without (written
on the loop), and snapshots every few lines, every report it accepted is in the state a new
master loads, counted once, and the new master hands out exactly the shards never reported."""

import threading
from pathlib import Path

import pytest

from flexjob.core.training.dataset import Dataset
from flexjob.master.main import serve_master
from flexjob.master.service import MasterService
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import LeaseRequest, NodeRef
from tests.support.masters import master_config

SHARDS = 200
CLIENTS = 8
ROUNDS = 6


@pytest.mark.parametrize("fsync", [False, True])
def test_every_accepted_report_is_saved_once_under_concurrent_calls(
    tmp_path: Path, fsync: bool
) -> None:
    config = master_config(
        "aio",
        tmp_path / "job",
        datasets=(Dataset(size=SHARDS * 2, shard_size=2),),
        persistence__fsync=fsync,
        persistence__snapshot_every=7,
        rpc__server="aio",
    )
    server = serve_master(MasterService(config), None)
    accepted: list[int] = []
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            with MasterClient(server.address, f"w{i}", timeout=20) as client:
                held: list[int] = []
                for n in range(ROUNDS):
                    lease = client.lease_shards(2 if n < ROUNDS - 1 else 0, done=held)
                    accepted.extend(s for s, ok in zip(held, lease.accepted, strict=True) if ok)
                    held = [s.shard_id for s in lease.shards]
        except BaseException as exc:  # asserted below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    server.stop(0)  # the service is never closed: only what the calls saved is on disk
    assert not errors
    assert len(accepted) == len(set(accepted)) == CLIENTS * 2 * (ROUNDS - 1)

    restored = MasterService(config)
    assert restored.get_progress(NodeRef("check"), "").shards_done == len(accepted)
    again = restored.lease_shards(NodeRef("check"), LeaseRequest("", SHARDS)).shards
    assert sorted(s.shard_id for s in again) == sorted(set(range(SHARDS)) - set(accepted))
