"""Hostile clients against a parameter server's membership key: ``flexjob/ps/member/<i>`` (the
address workers dial for PS ``i``) is written by PS replica ``i`` (node ``ps-<i>``) alone. A
worker's credential, or another PS's, is refused; the books and the key stay as they were.
Both gRPC servers, on 127.0.0.1."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.api import names
from flexjob.api.errors import FlexjobError
from flexjob.core.training.master_config import RPC_SERVERS
from tests.support.guarded_master import GuardedMaster, guarded_config, started_world

MEMBER_0 = names.KV_PS_MEMBER_PREFIX + "0"


@pytest.fixture(params=RPC_SERVERS)
def master(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GuardedMaster]:
    m = GuardedMaster(guarded_config(tmp_path / "job", request.param))
    started_world(m)
    with m.client("ps-0") as owner:
        owner.kv_set(MEMBER_0, b'{"address": "127.0.0.1:1"}')
    yield m
    m.stop()


@pytest.mark.parametrize("caller", ["worker-0", "ps-1"])
@pytest.mark.parametrize("op", ["set", "add"])
def test_a_ps_membership_is_written_by_that_ps_only(
    master: GuardedMaster, caller: str, op: str
) -> None:
    before = (master.books(), master.service.kv_get(MEMBER_0))
    refused = pytest.raises(FlexjobError, match=r"PERMISSION_DENIED: .* node 'ps-0' only")
    with master.client(caller) as other, refused:
        if op == "set":
            other.kv_set(MEMBER_0, b'{"address": "127.0.0.1:666"}')
        else:
            other.kv_add(MEMBER_0, 1)
    assert (master.books(), master.service.kv_get(MEMBER_0)) == before


def test_the_ps_itself_rewrites_its_membership(master: GuardedMaster) -> None:
    with master.client("ps-0") as owner:
        owner.kv_set(MEMBER_0, b'{"address": "127.0.0.1:2"}')
    assert master.service.kv_get(MEMBER_0) == b'{"address": "127.0.0.1:2"}'
