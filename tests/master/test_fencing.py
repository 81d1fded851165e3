"""A node the master declared dead (heartbeat timeout) that comes back, against a real master
process over gRPC: its stale reports and its old world are refused with a status that says it
was fenced, its agent rejoins as a new member with a new incarnation, a call still carrying
the old incarnation stays refused, and every sample is trained exactly once."""

import threading
from collections import Counter
from pathlib import Path

import pytest

from flexjob.api.errors import NodeFencedError
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.launch import MasterProcess
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef, ShardInfo
from tests.master.conftest import wait_for


def beat_until(client: MasterClient, stop: threading.Event) -> None:
    while not stop.wait(0.1):
        client.heartbeat()


def drain(client: MasterClient, counted: Counter[tuple[int, int]]) -> None:
    """Lease and report every shard left, counting the samples of each accepted report."""
    while True:
        shard = client.get_shard()
        if shard.end_of_data:
            return
        if shard.has_shard and client.report_shard(shard.shard_id):
            counted.update((shard.epoch, i) for i in shard.sample_indices())


def test_a_node_declared_dead_that_comes_back_is_fenced_then_rejoins_as_a_new_member(
    master_process: MasterProcess, process_config: MasterConfig
) -> None:
    address = master_process.address
    a = MasterClient(address, NodeRef("a"), retry_deadline=5.0)
    b = MasterClient(address, NodeRef("b"), retry_deadline=5.0)
    counted: Counter[tuple[int, int]] = Counter()
    old = a.heartbeat().incarnation
    b.heartbeat()
    a.join("127.0.0.1:0")
    b.join("127.0.0.1:0")
    assert a.wait_world(timeout=30).members == b.wait_world(timeout=30).members == ("a", "b")
    done = a.get_shard()
    assert a.report_shard(done.shard_id)
    counted.update((done.epoch, i) for i in done.sample_indices())
    held: ShardInfo = a.get_shard()  # trained when the partition starts: never reported

    stop = threading.Event()
    beats = threading.Thread(target=beat_until, args=(b, stop))
    beats.start()
    try:  # a is silent past the heartbeat timeout (1 s); b keeps beating
        wait_for(lambda: "a" not in b.running_nodes(), timeout=30, what="a declared dead")
    finally:
        stop.set()
        beats.join()

    with pytest.raises(NodeFencedError, match=r"node a .*declared dead"):
        a.report_shard(held.shard_id)
    with pytest.raises(NodeFencedError):
        a.get_world()
    its_process = MasterClient(address, NodeRef("a.1"), retry_deadline=5.0)
    with its_process, pytest.raises(NodeFencedError):
        its_process.get_shard()
    reply = a.heartbeat()
    assert reply.fenced and reply.incarnation == old

    a.leave_membership()  # its agent stopped its workers: it joins again
    new = a.heartbeat()
    assert not new.fenced and new.incarnation > old
    assert a.incarnation == new.incarnation  # what its calls carry from now
    a.join("127.0.0.1:0")
    b.join("127.0.0.1:0")
    world = a.wait_world(timeout=30)
    assert set(world.members) == {"a", "b"} and world.round > 1
    stale = MasterClient(address, NodeRef("a", incarnation=old), retry_deadline=5.0)
    with stale, pytest.raises(NodeFencedError):
        stale.report_shard(held.shard_id)

    drain(b, counted)
    epochs = process_config.datasets[0].epochs
    size = process_config.datasets[0].size or 0
    assert counted == Counter({(e, i): 1 for e in range(epochs) for i in range(size)})
    for c in (a, b):
        c.close()
    master_process.stop()
    log = Path(master_process.log_name).read_text()
    assert log.count("event=node_dead") == 1, log  # once: its return is no second death
