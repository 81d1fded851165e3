"""A node the master declared dead (heartbeat timeout) that comes back, against a real master
process over gRPC: its stale reports and its old world are refused with a status that says it
was fenced, its agent rejoins as a new member with a new incarnation, a call still carrying
the old incarnation stays refused — a training process's too, which carries the incarnation
its agent started it under — and every sample is trained exactly once."""

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flexjob.api import names
from flexjob.api.errors import NodeFencedError
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.launch import MasterProcess, spawn_master
from flexjob.master.main import METRICS_ADDR_FILE
from flexjob.platform.ports import free_port
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import DEFAULT_DATASET, NodeRef, ShardInfo
from flexjob.trainer.link import MasterLink
from flexjob.trainer.sampler import ShardSamples
from flexjob.trainer.settings import TrainerSettings
from flexjob.trainer.world import node_identity
from tests.master.conftest import wait_for
from tests.support.masters import serving
from tests.support.metrics import metrics_url, scrape, value


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


def trainer_link(address: str, node: str, local_rank: int, incarnation: int) -> MasterLink:
    """The master link of a training process as its agent starts it: from its environment
    (``trainer.settings``), which names the membership it was started under."""
    settings = TrainerSettings.from_env(
        {
            names.ENV_MASTER: address,
            names.ENV_NODE_ID: node,
            names.ENV_LOCAL_RANK: str(local_rank),
            names.ENV_LOCAL_WORLD_SIZE: "2",
            names.ENV_INCARNATION: str(incarnation),
        }
    )
    return MasterLink(node_identity(settings))


def books(url: str) -> dict[str, float]:
    """The master's shards by state (todo / doing / done) and its samples done."""
    got = scrape(url)
    job = {"job_name": "itest"}
    shards = {s: value(got, "flexjob_master_shards", state=s, **job) for s in STATES}
    return {**shards, "samples": value(got, "flexjob_master_samples_total", **job)}


STATES = ("todo", "doing", "done")


@pytest.fixture
def roomy_master(process_config: MasterConfig) -> Iterator[MasterProcess]:
    """A master whose heartbeat timeout (``ROOMY_TIMEOUT``) a beating node keeps on a loaded
    machine, and across the master's own restart."""
    config = process_config.with_overrides(
        port=free_port(), node_health__heartbeat_timeout=ROOMY_TIMEOUT
    )
    yield from serving(spawn_master(config))


#: Seconds: a node silent that long is dead (a node beating every 0.1 s is not, under load).
ROOMY_TIMEOUT = 3.0


def test_a_training_process_of_a_fenced_incarnation_is_refused_after_its_agent_rejoined(
    roomy_master: MasterProcess, process_config: MasterConfig
) -> None:
    """A late call of a worker of the old membership (killed when its agent was fenced, its
    packet still in flight) changes nothing on the master once the agent rejoined: its report
    and lease, its rendezvous calls are refused as fenced, the books stay as they were; the
    new membership's worker is served."""
    address = roomy_master.address
    url = metrics_url(Path(str(process_config.job_dir)) / METRICS_ADDR_FILE)
    a = MasterClient(address, NodeRef("a"), retry_deadline=5.0)
    b = MasterClient(address, NodeRef("b"), retry_deadline=5.0)
    old = a.heartbeat().incarnation
    b.heartbeat()
    old_worker = trainer_link(address, "a", 1, old)  # process a.1, started under `old`
    assert old_worker.proc.node_id == "a.1"
    a.join("127.0.0.1:0")
    b.join("127.0.0.1:0")
    assert a.wait_world(timeout=30).members == ("a", "b")
    done = old_worker.get_shard(DEFAULT_DATASET)
    assert isinstance(done, ShardSamples) and old_worker.report_shard(
        DEFAULT_DATASET, done.shard_id
    )
    held = old_worker.get_shard(DEFAULT_DATASET)  # trained, never reported before the fence
    assert isinstance(held, ShardSamples)

    stop = threading.Event()
    beats = threading.Thread(target=beat_until, args=(b, stop))
    beats.start()
    try:  # a is silent past the heartbeat timeout; b keeps beating
        wait_for(lambda: "a" not in b.running_nodes(), timeout=30, what="a declared dead")
        a.leave_membership()  # its agent killed its workers and joins again
        new = a.heartbeat().incarnation
        assert new > old
        new_worker = trainer_link(address, "a", 1, new)
        a.join("127.0.0.1:0")
        b.join("127.0.0.1:0")
        assert set(a.wait_world(timeout=30).members) == {"a", "b"}
        mine = new_worker.get_shard(DEFAULT_DATASET)  # the new member's worker is served
        assert isinstance(mine, ShardSamples)
        before = books(url)
        assert before["done"] == 1 and before["doing"] == 1, before  # a's old shard went back

        late_calls: dict[str, Callable[[], object]] = {
            "report": lambda: old_worker.proc.report_shard(held.shard_id),
            "lease": lambda: old_worker.proc.lease_shards(4),
            "report and lease": lambda: old_worker.proc.lease_shards(1, (held.shard_id,)),
            "give back": lambda: old_worker.proc.lease_shards(0, release=(held.shard_id,)),
            "get_shard": lambda: old_worker.proc.get_shard(),
            "join": lambda: old_worker.node.join("127.0.0.1:0", 2),
            "get_world": lambda: old_worker.node.get_world(),
            "nodes_waiting": lambda: old_worker.node.nodes_waiting(),
        }
        for what, call in late_calls.items():
            with pytest.raises(NodeFencedError, match=rf"node a \(incarnation {old}\)"):
                call()
                pytest.fail(f"the old worker's {what} was taken")
        assert books(url) == before  # nothing the late calls said counted
        assert "a" in b.running_nodes()  # nor did they break the new member's world
        assert new_worker.proc.report_shard(mine.shard_id)  # (a report that leases none)
    finally:
        stop.set()
        beats.join()
    after = books(url)
    assert (after["done"], after["doing"]) == (2, 0), after
    for c in (a, b):
        c.close()
    for link in (old_worker, new_worker):
        link.close()


def test_a_node_fenced_before_a_master_restart_stays_fenced_and_live_nodes_go_on(
    process_config: MasterConfig,
) -> None:
    """The memberships are saved with the master's state: after SIGKILL and a restart from
    its state dir, the fenced node's old incarnation is still refused (its agent's and its
    workers'), the live node goes on under its incarnation, and a node joining again gets an
    incarnation never given before."""
    # A port below the ephemeral range (tests/master/test_master_restart.py says why).
    config = process_config.with_overrides(
        port=free_port(), node_health__heartbeat_timeout=ROOMY_TIMEOUT
    )
    masters = [spawn_master(config)]
    address = masters[0].address
    a = MasterClient(address, NodeRef("a"), retry_deadline=30.0)
    b = MasterClient(address, NodeRef("b"), retry_deadline=30.0)
    stop = threading.Event()
    beats = threading.Thread(target=beat_until, args=(b, stop))
    try:
        old, live = a.heartbeat().incarnation, b.heartbeat().incarnation
        a.join("127.0.0.1:0")
        b.join("127.0.0.1:0")
        assert a.wait_world(timeout=30).members == ("a", "b")
        done = b.get_shard()
        assert b.report_shard(done.shard_id)
        beats.start()  # a is silent past the heartbeat timeout; b keeps beating
        wait_for(lambda: "a" not in b.running_nodes(), timeout=30, what="a declared dead")
        with pytest.raises(NodeFencedError):
            a.get_world()

        assert masters[0].kill() == -9
        masters.append(spawn_master(config))  # the same port and state dir
        log = Path(masters[1].log_name).read_text()
        assert re.search(r"event=state_restored .*members=1 fenced=1", log), log

        assert a.heartbeat().fenced  # its agent is told, with the incarnation it had
        old_worker = trainer_link(address, "a", 1, old)
        for late in (
            lambda: a.report_shard(done.shard_id),
            lambda: a.get_world(),
            lambda: old_worker.proc.get_shard(),
            lambda: old_worker.proc.lease_shards(2),
        ):
            with pytest.raises(NodeFencedError, match=rf"node a \(incarnation {old}\)"):
                late()
        assert b.get_progress().shards_done == 1  # the books came back, and stay
        reply = b.heartbeat()  # the live node goes on under its incarnation
        assert not reply.fenced and reply.incarnation == b.incarnation == live
        b_worker = trainer_link(address, "b", 1, live)
        assert isinstance(b_worker.get_shard(DEFAULT_DATASET), ShardSamples)

        a.leave_membership()  # a's agent stopped its workers: it joins again
        new = a.heartbeat()
        assert not new.fenced and new.incarnation > max(old, live)
        a.join("127.0.0.1:0")
        b.join("127.0.0.1:0")
        assert set(a.wait_world(timeout=30).members) == {"a", "b"}
        for link in (old_worker, b_worker):
            link.close()
    finally:
        stop.set()
        if beats.is_alive():
            beats.join()
        for c in (a, b):
            c.close()
        for m in masters:
            m.stop()
