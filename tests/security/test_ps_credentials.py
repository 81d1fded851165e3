"""Hostile use of what a parameter server holds: a PS replica holds its node's credential
(``ps-<i>``) and its PS secret (``rpc.ps_auth``), not the job's token. Stolen, they act at the
master as that PS only: master-owned keys and other nodes' calls are refused, and the member key
forges no credential the master accepts. At the PS, the control service admits the master's
credential for that one PS (or the job's token) only: not a worker's, not another PS's, not the
token's digest a PS secret holds; the data service admits the job's members only. Every probe
asserts the refusal and that the books (the master's, or the PS's version and rows) are
unchanged. Both master servers, 127.0.0.1."""

from collections.abc import Iterator
from contextlib import closing

import numpy as np
import pytest

from flexjob.api import PodTemplateSpec, names
from flexjob.api.enums import ReplicaType
from flexjob.api.errors import FlexjobError
from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec
from flexjob.core.ps.parameters import ModelSpec
from flexjob.core.ps.table import TableSpec
from flexjob.core.replicas import ReplicaRequest
from flexjob.operator.node_credentials import with_credential
from flexjob.ps.service import PsService
from flexjob.ps.set_member import SetMember
from flexjob.rpc.auth import member_key, member_mac, node_credential
from flexjob.rpc.ps_auth import (
    PsCredentials,
    ps_control_bearer,
    ps_node_env,
    ps_secret,
    token_digest,
)
from flexjob.rpc.ps_client import PsClient
from flexjob.rpc.ps_control import PsControlClient, add_control
from flexjob.rpc.ps_gate import GateInterceptor, PsGate
from flexjob.rpc.ps_server import serve_ps
from flexjob.rpc.server import RunningServer
from tests.support.guarded_master import TOKEN, GuardedMaster

MODEL = ModelSpec(
    OptimizerSpec(OptimizerKind.SGD, lr=0.5),
    (TableSpec("user", 4, num_rows=100, init_scale=0.1),),
    {"w": np.ones((2, 3), dtype=np.float32)},
)


def _forged_with_member_key(node: str) -> str:
    """What a stolen PS secret can make for ``node``: a right member MAC, a guessed node MAC."""
    return f"node:{node}:{'0' * 64}:{member_mac(member_key(TOKEN), node)}"


@pytest.fixture
def master(live_master: GuardedMaster) -> GuardedMaster:
    return live_master


@pytest.mark.parametrize("key", [names.KV_PS_SET, names.KV_PS_CHANGE, names.KV_INCARNATION])
def test_a_ps_credential_may_not_write_a_master_owned_key(master: GuardedMaster, key: str) -> None:
    before = master.books()
    with master.client("ps-0") as ps, pytest.raises(FlexjobError, match="PERMISSION_DENIED"):
        ps.kv_set(key, b'{"forged": true}')
    assert master.books() == before


@pytest.mark.parametrize("victim", ["worker-0", "ps-1"])
def test_a_ps_credential_may_not_act_as_another_node(master: GuardedMaster, victim: str) -> None:
    before = master.books()
    refused = pytest.raises(FlexjobError, match="PERMISSION_DENIED")
    with master.client(victim, as_node="ps-0") as forged, refused:
        forged.heartbeat()
    assert master.books() == before


@pytest.mark.parametrize("victim", ["worker-0", "ps-1"])
def test_the_member_key_forges_no_credential_the_master_accepts(
    master: GuardedMaster, victim: str
) -> None:
    before = master.books()
    refused = pytest.raises(FlexjobError, match="UNAUTHENTICATED")
    with master.client(victim, bearer=_forged_with_member_key(victim)) as forged, refused:
        forged.heartbeat()
    assert master.books() == before


@pytest.fixture
def ps_pair() -> Iterator[list[RunningServer]]:
    """PS 0 and PS 1 of the job, each with its own PS secret, PS 0 configured."""
    servers = [_serve(i) for i in (0, 1)]
    with closing(_member(servers[0])) as member:
        member.configure(MODEL, 2)
    yield servers
    for server in servers:
        server.stop(grace=None)


def _serve(index: int) -> RunningServer:
    """PS ``index`` as ``flexjob ps`` serves it: its data calls behind its gate, its control
    service on the same port (``ps.main.run_ps``), checked under its own PS secret."""
    service, gate = PsService(index, 2), PsGate()
    member = SetMember(service, gate, None, None, True)
    return serve_ps(
        service,
        credentials=PsCredentials.from_token(TOKEN, index),
        interceptors=[GateInterceptor(gate)],
        register=lambda s: add_control(s, member),
    )


def _member(server: RunningServer, bearer: str = "") -> PsClient:
    """A client of ``server`` presenting ``bearer`` (default: ``worker-0``'s credential)."""
    presented = bearer or node_credential(TOKEN, "worker-0")
    return PsClient(server.address, token=presented, retry_deadline=1.0)


def _ps_books(server: RunningServer) -> tuple[object, ...]:
    with closing(_member(server)) as member:
        version, dense = member.pull_dense()
        return version, {k: v.tolist() for k, v in dense.items()}, member.stats().rows


@pytest.mark.parametrize(
    "bearer",
    [
        node_credential(TOKEN, "worker-0"),  # a worker
        node_credential(TOKEN, "ps-1"),  # another PS's node credential
        ps_control_bearer(TOKEN, 1),  # the master's credential for PS 1, in PS 1's secret
        token_digest(TOKEN),  # the digest in every PS's secret: not the token
    ],
    ids=["worker", "other-ps-node", "other-ps-control", "token-digest"],
)
def test_only_the_masters_credential_for_this_ps_may_pause_it(
    ps_pair: list[RunningServer], bearer: str
) -> None:
    before = _ps_books(ps_pair[0])
    refused = pytest.raises(FlexjobError, match=r"PERMISSION_DENIED|UNAUTHENTICATED")
    with PsControlClient(ps_pair[0].address, token=bearer, retry_deadline=1.0) as c, refused:
        c.pause()
    assert _ps_books(ps_pair[0]) == before  # and still serving: nothing paused it


@pytest.mark.parametrize("bearer", [ps_control_bearer(TOKEN, 0), TOKEN], ids=["control", "token"])
def test_the_masters_credential_for_this_ps_or_the_token_pauses_it(
    ps_pair: list[RunningServer], bearer: str
) -> None:
    with PsControlClient(ps_pair[0].address, token=bearer) as c:
        c.pause()
    with closing(_member(ps_pair[0])) as member, pytest.raises(FlexjobError, match="ps set"):
        member.pull_dense()


@pytest.mark.parametrize(
    "bearer",
    [node_credential("another-jobs-token", "worker-0"), "node:worker-0:00:00", "x" * 64],
    ids=["another-job", "garbage-macs", "garbage"],
)
def test_a_ps_serves_no_one_but_the_jobs_members(ps_pair: list[RunningServer], bearer: str) -> None:
    before = _ps_books(ps_pair[0])
    refused = pytest.raises(FlexjobError, match="UNAUTHENTICATED")
    with closing(_member(ps_pair[0], bearer)) as stranger, refused:
        stranger.push_rows("user", np.array([1], dtype=np.int64), np.ones((1, 4), np.float32))
    assert _ps_books(ps_pair[0]) == before


def test_a_ps_replica_made_by_the_operator_holds_its_ps_secret_and_no_token() -> None:
    template = PodTemplateSpec.model_validate(
        {"spec": {"containers": [{"name": "ps", "env": [{"name": "KEEP", "value": "1"}]}]}}
    )
    request = ReplicaRequest(
        namespace="default",
        job="j",
        type=ReplicaType.PS,
        index=1,
        name="j-ps-1",
        command=(),
        args=(),
        env={names.ENV_MASTER_TOKEN: TOKEN},
        labels={},
        resources={},
        template=template,
    )
    credited = with_credential(request, TOKEN)
    pod_env = {e.name: e.value for e in credited.template.spec.containers[0].env}
    own = {
        names.ENV_NODE_CREDENTIAL: node_credential(TOKEN, "ps-1"),
        names.ENV_PS_SECRET: ps_secret(TOKEN, 1),
    }
    assert (pod_env, dict(credited.env)) == ({"KEEP": "1", **own}, own)


def test_a_ps_of_flexjob_run_holds_its_ps_secret_and_no_token() -> None:
    env = ps_node_env(
        {names.ENV_MASTER_TOKEN_FILE: "/job/master.token", "KEEP": "1"}, TOKEN, "ps-0", 0
    )
    assert env == {
        "KEEP": "1",
        names.ENV_NODE_CREDENTIAL: node_credential(TOKEN, "ps-0"),
        names.ENV_PS_SECRET: ps_secret(TOKEN, 0),
    }
