"""Trainers' shard requests over ``LeaseShardsStream`` (``rpc.shard_stream``), on both of the
master's servers: the master holds a bounded number of streams and the callers beyond them
are served by unary calls, with nothing lost or handed out twice; an error the master answers
on a stream is raised like a unary call's and the next request is served; a master that stops
answering does not hang its callers."""

import os
import signal
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.metrics_core import Metric

from flexjob.api.errors import InvalidSpecError, UnavailableError
from flexjob.api.limits import MAX_SHARD_LEASE
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import RPC_SERVERS, MasterConfig
from flexjob.master.launch import spawn_master
from flexjob.master.main import METRICS_ADDR_FILE, start_master
from flexjob.rpc.client import MasterClient
from tests.support.masters import master_config
from tests.support.metrics import metrics_url, scrape, value

SHARDS = 60


def _config(tmp_path: Path, server: str, streams: int) -> MasterConfig:
    return master_config(
        "streams",
        tmp_path / "job",
        datasets=(Dataset(size=SHARDS * 2, shard_size=2),),
        rpc__server=server,
        rpc__shard_streams=streams,
    )


def _count(families: dict[str, Metric], method: str) -> float:
    """Calls (or stream messages) of ``method`` answered OK so far, by this test's job (the
    histogram is the process's: other tests' masters count under their own ``job_name``); 0
    before the first."""
    try:
        count = "flexjob_master_rpc_seconds_count"
        return value(families, count, job_name="streams", method=method, code="OK")
    except (KeyError, AssertionError):
        return 0.0


def _train(client: MasterClient, lease: int, trained: list[int]) -> None:
    """Lease ``lease`` shards at a time, "train" each and report it with the next lease."""
    done: list[int] = []
    while True:
        got = client.lease_shards(lease, done)
        done = [s.shard_id for s in got.shards]
        trained.extend(done)
        if not got.shards and got.end_of_data:
            return


@pytest.mark.parametrize("server", RPC_SERVERS)
def test_callers_beyond_the_masters_streams_are_served_by_unary_calls_and_lose_nothing(
    tmp_path: Path, server: str
) -> None:
    handle = start_master(_config(tmp_path, server, streams=1))
    url = metrics_url(tmp_path / "job" / METRICS_ADDR_FILE)
    before = scrape(url)  # the RPC histogram is the process's: other masters here count too
    clients = [MasterClient(handle.address, f"worker-{i}") for i in range(3)]
    trained: list[list[int]] = [[] for _ in clients]
    try:
        # one caller first: it takes the master's only stream and keeps it
        clients[0].lease_shards(0)
        threads = [
            threading.Thread(target=_train, args=(c, 2, out))
            for c, out in zip(clients, trained, strict=True)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        progress = clients[0].get_progress()
        after = scrape(url)
    finally:
        for c in clients:
            c.close()
        handle.stop()
    every = sorted(s for out in trained for s in out)
    assert every == list(range(SHARDS))  # each shard handed out once
    assert progress.finished and progress.shards_done == SHARDS  # and counted done
    assert all(trained), "every caller was served"
    streamed = _count(after, "LeaseShardsStream") - _count(before, "LeaseShardsStream")
    unary = _count(after, "LeaseShards") - _count(before, "LeaseShards")
    # each request leases 2: the first caller's went over its stream, the others' (refused
    # one) as unary calls
    assert streamed >= len(trained[0]) // 2
    assert unary >= (len(trained[1]) + len(trained[2])) // 2


@pytest.mark.parametrize("server", RPC_SERVERS)
def test_an_error_answered_on_the_stream_is_raised_and_the_next_request_served(
    tmp_path: Path, server: str
) -> None:
    handle = start_master(_config(tmp_path, server, streams=4))
    try:
        with MasterClient(handle.address, "worker-0") as client:
            first = client.lease_shards(1).shards[0]
            with pytest.raises(InvalidSpecError, match=f"count must be in 0..{MAX_SHARD_LEASE}"):
                client.lease_shards(MAX_SHARD_LEASE + 1, [first.shard_id])
            got = client.lease_shards(1, [first.shard_id])  # a new stream
            assert got.accepted == (True,) and got.shards[0].shard_id != first.shard_id
            assert client.get_progress().shards_done == 1
    finally:
        handle.stop()


def test_a_master_that_stops_answering_does_not_hang_its_caller(tmp_path: Path) -> None:
    config = replace(_config(tmp_path, "threads", streams=4), port=0)
    master = spawn_master(config)
    try:
        with MasterClient(master.address, "worker-0", timeout=0.5, retry_deadline=1.0) as client:
            shard = client.lease_shards(1).shards[0]  # the stream is open
            os.kill(master.process.pid, signal.SIGSTOP)
            try:
                with pytest.raises(UnavailableError, match="unreachable"):
                    client.lease_shards(1, [shard.shard_id])
            finally:
                os.kill(master.process.pid, signal.SIGCONT)
            # once it answers again, so does the stream: the report is counted once
            got = client.lease_shards(0, [shard.shard_id])
            assert got.accepted == (True,)
            assert client.get_progress().shards_done == 1
    finally:
        master.stop()
