"""The hostile-client suite: real servers on 127.0.0.1, each probe a hostile request that must
be refused (a status or exit code naming the field, a closed connection), with the books the
service keeps compared before and after: a refusal that changed them is a failure too.

Fixtures here serve one of each: a job master (both gRPC services, ``master``), a PS replica
(``ps``), the job's TCPStore server (``store``), the HTTP server over a local platform and the
brain (``http_server``, ``brain``), a metrics endpoint with a token (``metrics``) and a
``FLEXJOB_HOME`` with a sentinel folder beside it that no command may touch (``home``).
Probes are data: each test module lists its cases and one test runs them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import grpc
import pytest

from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import RPC_SERVERS, MasterConfig, RpcConfig
from flexjob.master.main import serve_master
from flexjob.master.service import MasterService
from flexjob.rpc.gen import master_control_pb2_grpc as control_grpc
from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.gen import master_pb2_grpc as pb_grpc
from tests.support.guarded_master import GuardedMaster, guarded_config, started_world

#: The KV keys the books list (the job's own, and those the probes try to write).
WATCHED_KEYS = ("flexjob/incarnation", "flexjob/progress/step", "probe", "probe/int", "big")
SHARDS = 8
#: gRPC deadline of one probe call: a refusal is immediate.
CALL_TIMEOUT = 10.0


def node(node_id: str = "worker-0") -> pb.NodeRef:
    return pb.NodeRef(node_id=node_id, replica_type="worker", replica_index=0)


@dataclass
class Master:
    """A job master serving both gRPC services on 127.0.0.1, and raw stubs a hostile client
    uses (no client-side checks)."""

    service: MasterService
    address: str
    channel: grpc.Channel

    @property
    def stub(self) -> pb_grpc.MasterStub:
        return pb_grpc.MasterStub(self.channel)  # type: ignore[no-untyped-call]

    @property
    def control(self) -> control_grpc.MasterControlStub:
        return control_grpc.MasterControlStub(self.channel)  # type: ignore[no-untyped-call]

    def books(self) -> tuple[Any, ...]:
        """What the master knows that a refused call must not change: its view (rounds,
        datasets and their progress, step), the watched keys, the nodes it has stats of."""
        records, _ = self.service.stats_snapshot()
        kv = {k: self.service.kv_get(k) for k in WATCHED_KEYS}
        return self.service.view(), kv, sorted(records)


@pytest.fixture(params=RPC_SERVERS)
def live_master(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GuardedMaster]:
    """A guarded master (``tests.support.guarded_master``) on each gRPC server, its world of two
    nodes started."""
    m = GuardedMaster(guarded_config(tmp_path / "job", request.param))
    started_world(m)
    yield m
    m.stop()


@pytest.fixture
def master() -> Iterator[Master]:
    with served_master("threads") as served:
        yield served


@contextlib.contextmanager
def served_master(rpc_server: str, token: str | None = None) -> Iterator[Master]:
    """The victim job's master on the server ``rpc_server`` names (``MasterConfig``), with
    ``token`` when given."""
    config = MasterConfig(
        job_name="victim",
        datasets=(Dataset(name="train", size=SHARDS * 4, shard_size=4, epochs=1),),
        rpc=RpcConfig(server="threads"),
    )
    service = MasterService(config)
    server = serve_master(service, token)
    channel = grpc.insecure_channel(server.address)
    try:
        yield Master(service, server.address, channel)
    finally:
        channel.close()
        server.stop(0)
        service.close()


def refused_with(call: Callable[[], object]) -> grpc.RpcError:
    """The error ``call`` raised; fails when it was answered."""
    with pytest.raises(grpc.RpcError) as refused:
        call()
    return refused.value


#: gRPC codes that name bad input; a hostile request must get one of these, never UNKNOWN
#: or INTERNAL.
CLIENT_ERRORS = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
    }
)


class Booked(Protocol):
    def books(self) -> tuple[Any, ...]: ...


T = TypeVar("T", bound=Booked)


@contextlib.contextmanager
def books_unchanged(target: T, setup: Callable[[T], None] | None = None) -> Iterator[None]:
    """``setup`` (what a probe needs in place first) done on ``target``: the block then changes
    nothing in ``target``'s books (all that a client could change there)."""
    if setup is not None:
        setup(target)
    before = target.books()
    yield
    assert target.books() == before


def assert_refused(call: Callable[[], object], code: grpc.StatusCode, says: str) -> None:
    """``call`` fails with ``code`` (a client error, never UNKNOWN or INTERNAL) and details
    that hold ``says`` (the field or the bound)."""
    error = refused_with(call)
    assert error.code() in CLIENT_ERRORS, (error.code(), error.details())
    assert error.code() is code, error.details()
    assert says in (error.details() or ""), error.details()


@dataclass
class Home:
    """``FLEXJOB_HOME`` (``path``) and a sentinel tree beside it (``outside``): names that
    escape the home land in the folder above it, where the sentinel lives."""

    path: Path
    outside: Path

    def outside_listing(self) -> dict[str, str]:
        """Every file beside the home with a digest of its content."""
        return {
            str(p.relative_to(self.outside)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(self.outside.rglob("*"))
            if p.is_file() and not p.is_relative_to(self.path)
        }


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    outside = tmp_path / "outside"
    path = outside / "home"
    path.mkdir(parents=True)
    for victim in ("x/victim/keep.txt", "x/job/keep.txt", "victim/keep.txt", "keep.txt"):
        (outside / victim).parent.mkdir(parents=True, exist_ok=True)
        (outside / victim).write_text("must survive\n")
    monkeypatch.setenv("FLEXJOB_HOME", str(path))
    for name in ("FLEXJOB_SERVER_TOKEN", "FLEXJOB_BRAIN_TOKEN", "FLEXJOB_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    return Home(path, outside)


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the services' tokens, plus ``extra``."""
    drop = {"FLEXJOB_SERVER_TOKEN", "FLEXJOB_BRAIN_TOKEN", "FLEXJOB_METRICS_TOKEN"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}
