"""Hostile clients against node identity: a call that names a node must prove to be that node
(its credential, ``rpc.auth.node_credential``) or hold the job's token; a node's own valid
credential does not let it report shards it never held, before or after a master restart.
Every probe asserts the refusal and that the job's books are unchanged afterwards. Both of the
master's gRPC servers (threads, aio), on 127.0.0.1."""

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from flexjob.api.errors import FlexjobError
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import RPC_SERVERS
from flexjob.rpc.auth import node_credential
from flexjob.rpc.client import MasterClient
from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.messages import NodeStats
from tests.support.guarded_master import (
    SHARDS,
    GuardedMaster,
    auth,
    guarded_config,
    raw_stubs,
    started_world,
)
from tests.support.local_jobs import run_flexjob


@pytest.fixture(params=RPC_SERVERS)
def master(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GuardedMaster]:
    m = GuardedMaster(guarded_config(tmp_path / "job", request.param))
    yield m
    m.stop()


@pytest.fixture
def world(master: GuardedMaster) -> Iterator[dict[str, int]]:
    """The live job: both nodes in a world, ``worker-0``'s agent attached, a shard each."""
    held = started_world(master)
    stopping = threading.Event()
    with master.client("worker-0") as agent:
        agent.attach_in_background(stopping, retry_s=0.2)
        yield held
        stopping.set()


Forged = Callable[[MasterClient, dict[str, int]], object]

#: Calls naming ``worker-0`` from a client that proves to be ``worker-1``.
FORGED: dict[str, Forged] = {
    "lease_done": lambda c, held: c.lease_shards(0, done=[held["worker-0"]]),
    "lease_release": lambda c, held: c.lease_shards(0, release=[held["worker-0"]]),
    "lease_more": lambda c, held: c.lease_shards(1),
    "get_shard": lambda c, held: c.get_shard(),
    "heartbeat": lambda c, held: c.heartbeat(),
    "report_failure": lambda c, held: c.report_failure("forged", 1, restarting=False),
    "report_restarting": lambda c, held: c.report_failure("forged", 1, restarting=True),
    "node_succeeded": lambda c, held: c.node_succeeded(),
    "join": lambda c, held: c.join(),
    "get_world": lambda c, held: c.get_world(),
    "nodes_waiting": lambda c, held: c.nodes_waiting(),
    "exclude_nodes": lambda c, held: c.exclude_nodes(1, {"worker-1": "forged"}),
    "report_stats": lambda c, held: c.report_stats(NodeStats(cpu_percent=1.0)),
    "register_dataset": lambda c, held: c.register_dataset(Dataset(name="forged", size=4)),
    "get_progress": lambda c, held: c.get_progress(),
}


@pytest.mark.parametrize("call", sorted(FORGED))
def test_a_call_naming_another_node_is_refused(
    master: GuardedMaster, world: dict[str, int], call: str
) -> None:
    before = master.books()
    with (
        master.client("worker-0", as_node="worker-1") as forger,
        pytest.raises(FlexjobError, match="PERMISSION_DENIED: the credential of node "),
    ):
        FORGED[call](forger, world)
    assert master.books() == before


def test_a_shard_report_naming_a_node_is_refused_from_outside_its_world(
    master: GuardedMaster, world: dict[str, int]
) -> None:
    before = master.books()
    with (
        master.client("worker-0", as_node="worker-9") as outsider,
        pytest.raises(FlexjobError, match="PERMISSION_DENIED: the credential of node "),
    ):
        outsider.report_shard(world["worker-0"])
    assert master.books() == before


def test_a_member_of_the_world_may_report_a_peers_shard_for_it(
    master: GuardedMaster, world: dict[str, int]
) -> None:
    """``trainer.peer_shards``: a survivor reports the shard a peer finished in a committed
    step before it died, as that peer; only members of the peer's world may."""
    with master.client("worker-0", as_node="worker-1") as peer:
        assert peer.report_shard(world["worker-0"])


def test_a_report_on_the_shard_stream_naming_another_node_is_refused(
    master: GuardedMaster, world: dict[str, int]
) -> None:
    before = master.books()
    forged = MasterClient(master.address, "worker-0", token=master.credential("worker-1"))
    with forged, pytest.raises(FlexjobError, match="PERMISSION_DENIED"):
        forged.lease_shards(0, done=[world["worker-0"]])
    assert master.books() == before


def test_an_attach_stream_opened_and_dropped_in_another_nodes_name_kills_nobody(
    master: GuardedMaster, world: dict[str, int]
) -> None:
    before = master.books()
    with master.client("worker-0", as_node="worker-1") as forger:
        stream = forger.attach()
        with pytest.raises(grpc.RpcError) as refused:
            next(iter(stream))
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "worker-0" in master.books().running
    assert master.books() == before


@pytest.mark.parametrize(
    "presented",
    ["", "not-the-token", "node:worker-0:" + "0" * 64, node_credential("another-job", "worker-0")],
    ids=["none", "wrong-token", "forged-mac", "another-jobs-credential"],
)
def test_a_call_without_a_valid_credential_is_unauthenticated(
    master: GuardedMaster, world: dict[str, int], presented: str
) -> None:
    before = master.books()
    with (
        MasterClient(master.address, "worker-0", token=presented, retry_deadline=1) as c,
        pytest.raises(FlexjobError, match="UNAUTHENTICATED"),
    ):
        c.report_shard(world["worker-0"])
    assert master.books() == before


@pytest.mark.parametrize(
    ("owner", "named"),
    [("worker-0.1", "worker-0"), ("worker-0", "worker-00"), ("worker-0", "worker-1.0")],
    ids=["process-as-its-node", "node-as-a-longer-name", "node-as-anothers-process"],
)
def test_a_credential_acts_only_as_its_node_and_that_nodes_processes(
    master: GuardedMaster, world: dict[str, int], owner: str, named: str
) -> None:
    before = master.books()
    with (
        master.client(named, as_node=owner) as c,
        pytest.raises(FlexjobError, match="PERMISSION_DENIED"),
    ):
        c.heartbeat()
    assert master.books() == before


def test_the_raw_attach_stream_without_a_credential_is_unauthenticated(
    master: GuardedMaster, world: dict[str, int]
) -> None:
    before = master.books()
    for stubs in raw_stubs(master.address):
        request = pb.AttachRequest(node=pb.NodeRef(node_id="worker-0"))
        with pytest.raises(grpc.RpcError) as refused:
            next(iter(stubs.master.Attach(request, metadata=auth("guess"))))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert master.books() == before


def test_a_node_reporting_shards_it_never_held_counts_none_before_a_restart(
    master: GuardedMaster, world: dict[str, int]
) -> None:
    before = master.books()
    with master.client("worker-1") as c:  # its own, valid credential
        others = [s for s in range(SHARDS) if s != world["worker-1"]]
        assert c.lease_shards(0, done=others).accepted == (False,) * len(others)
    assert master.books() == before


def test_a_node_reporting_shards_it_never_held_counts_none_after_a_restart(
    master: GuardedMaster, world: dict[str, int]
) -> None:
    master.restart()
    before = master.books()
    with master.client("worker-1") as c:
        others = [s for s in range(SHARDS) if s != world["worker-1"]]
        assert c.lease_shards(0, done=others).accepted == (False,) * len(others)
    assert master.books() == before
    with master.client("worker-0") as holder:  # the holder the journal names still counts
        assert holder.lease_shards(0, done=[world["worker-0"]]).accepted == (True,)


def test_a_report_naming_the_holder_after_a_restart_is_refused_without_its_credential(
    master: GuardedMaster, world: dict[str, int]
) -> None:
    master.restart()
    before = master.books()
    with (
        master.client("worker-0", as_node="worker-1") as forger,
        pytest.raises(FlexjobError, match="PERMISSION_DENIED"),
    ):
        forger.lease_shards(0, done=[world["worker-0"]])
    assert master.books() == before


def test_a_nodes_processes_act_with_its_credential(
    master: GuardedMaster, world: dict[str, int]
) -> None:
    with master.client("worker-0.1", as_node="worker-0") as process:
        lease = process.lease_shards(1)
        assert len(lease.shards) == 1
        assert process.lease_shards(0, done=[lease.shards[0].shard_id]).accepted == (True,)


SCRIPTS = Path(__file__).parent / "scripts"


@pytest.mark.e2e
def test_a_flexjob_run_job_has_a_token_and_its_node_only_its_own_credential(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PROBE_OUT": str(tmp_path)}
    env = {k: v for k, v in env.items() if not k.startswith("FLEXJOB_MASTER_TOKEN")}
    job = tmp_path / "job"
    run = run_flexjob(
        env,
        "run", "--nnodes", "1", "--job-dir", str(job), "--no-progress",
        str(SCRIPTS / "hostile_trainer.py"),
        timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert (job / "master.token").stat().st_mode & 0o777 == 0o600
    got = {p.stem: json.loads(p.read_text()) for p in tmp_path.glob("worker-*.json")}
    assert got == {
        node: {
            "token_vars": [],  # the job's token reaches the master, not the nodes
            "credential_of": node,
            "as_itself": "served",
            "as_another_node": "PERMISSION_DENIED",
            "without_credential": "UNAUTHENTICATED",
        }
        for node in ("worker-0",)
    }
