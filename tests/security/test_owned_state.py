"""Hostile clients against the state only its owner writes: the incarnation, the exclusions and
the PS set are the master's (no call writes them, not even with the job's token), an agent's
start count is its node's; a dataset keeps its first definition (the same one again changes
nothing, another under its name is refused naming it). Every probe asserts the refusal and
that the job's books are unchanged afterwards. Both gRPC servers, on 127.0.0.1."""

from pathlib import Path

import pytest

from flexjob.api import names
from flexjob.api.errors import FlexjobError, InvalidSpecError
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.owned_keys import NO_INCARNATION, incarnation_name
from flexjob.master.main import serve_master
from flexjob.master.service import MasterService
from flexjob.rpc.client import MasterClient
from tests.support.guarded_master import (
    TOKEN,
    GuardedMaster,
    guarded_config,
)

MASTER_KEYS = [
    names.KV_INCARNATION,
    names.KV_EXCLUDED_PREFIX + "worker-0",
    names.KV_PS_SET,
    names.KV_PS_CHANGE,
]


@pytest.fixture
def master(live_master: GuardedMaster) -> GuardedMaster:
    return live_master


@pytest.mark.parametrize("key", MASTER_KEYS)
@pytest.mark.parametrize("op", ["set", "add"])
def test_a_key_the_master_owns_is_written_by_no_call(
    master: GuardedMaster, key: str, op: str
) -> None:
    before = master.books()
    refused = pytest.raises(FlexjobError, match=r"PERMISSION_DENIED: key .* job master only")
    with master.client("admin", bearer=TOKEN) as admin, refused:  # even the token's holder
        if op == "set":
            admin.kv_set(key, b"../../elsewhere")
        else:
            admin.kv_add(key, 1)
    assert master.books() == before


def test_an_excluded_key_written_by_a_client_does_not_exclude_the_node(
    master: GuardedMaster,
) -> None:
    before = master.books()
    with master.client("worker-1") as c, pytest.raises(FlexjobError, match="PERMISSION_DENIED"):
        c.kv_set(names.KV_EXCLUDED_PREFIX + "worker-0", b"forged")
    assert master.books() == before
    # (the victim's own client joins as a new member of its node: that, not the forgery, is
    # the next change of the books)
    with master.client("worker-0") as victim:
        assert victim.heartbeat().excluded is False


def test_a_nodes_start_count_is_written_by_that_node_only(master: GuardedMaster) -> None:
    key = names.KV_AGENT_STARTS_PREFIX + "worker-0"
    before = master.books()
    refused = pytest.raises(FlexjobError, match="written by node 'worker-0' only")
    with master.client("worker-1") as other, refused:
        other.kv_add(key, 1)
    assert master.books() == before
    with master.client("worker-0") as owner:
        assert owner.kv_add(key, 1) == 1


def test_a_master_without_a_token_still_keeps_its_own_keys(tmp_path: Path) -> None:
    service = MasterService(guarded_config(tmp_path / "job"))
    server = serve_master(service, None)
    try:
        incarnation = service.kv_get(names.KV_INCARNATION)
        with MasterClient(server.address, "anyone", token="", retry_deadline=1) as c:
            with pytest.raises(FlexjobError, match="PERMISSION_DENIED"):
                c.kv_set(names.KV_INCARNATION, b"../../../tmp/x")
            assert c.kv_get(names.KV_INCARNATION) == incarnation
    finally:
        server.stop(0)
        service.close()


def test_registering_the_same_dataset_twice_changes_nothing(master: GuardedMaster) -> None:
    dataset = Dataset(name="extra", size=40, shard_size=4)
    with master.client("worker-0") as c:
        c.register_dataset(dataset)
        before = master.books()
        c.register_dataset(dataset)
    assert master.books() == before


@pytest.mark.parametrize(
    "other",
    [
        Dataset(name="extra", size=1, shard_size=1),
        Dataset(name="extra", size=40, shard_size=4, shuffle=True),
        Dataset(name="extra", size=40, shard_size=4, epochs=3),
    ],
    ids=["one-sample", "shuffled", "more-epochs"],
)
def test_another_definition_under_a_registered_name_is_refused_by_name(
    master: GuardedMaster, other: Dataset
) -> None:
    with master.client("worker-0") as c:
        c.register_dataset(Dataset(name="extra", size=40, shard_size=4))
        before = master.books()
        with pytest.raises(FlexjobError, match="ALREADY_EXISTS: dataset 'extra' is already"):
            c.register_dataset(other)
    assert master.books() == before


def test_another_definition_of_the_declared_dataset_is_refused_by_name(
    master: GuardedMaster,
) -> None:
    before = master.books()
    refused = pytest.raises(FlexjobError, match="ALREADY_EXISTS: dataset '' is already")
    with master.client("worker-0") as c, refused:
        c.register_dataset(Dataset(size=1, shard_size=1))
    assert master.books() == before


def test_a_dataset_registered_before_a_restart_keeps_its_definition_after_it(
    master: GuardedMaster,
) -> None:
    with master.client("worker-0") as c:
        c.register_dataset(Dataset(name="extra", size=40, shard_size=4))
    master.restart()
    before = master.books()
    with master.client("worker-0") as c, pytest.raises(FlexjobError, match="ALREADY_EXISTS"):
        c.register_dataset(Dataset(name="extra", size=1, shard_size=1))
        c.register_dataset(Dataset(name="extra", size=40, shard_size=4))  # the same: fine
    assert master.books() == before


@pytest.mark.parametrize("value", [b"../../etc", b"/abs/path", b"x" * 32, b"A" * 32, b""])
def test_an_incarnation_that_the_master_does_not_make_never_becomes_a_directory(
    value: bytes,
) -> None:
    with pytest.raises(InvalidSpecError, match="flexjob/incarnation: expected 32 lowercase hex"):
        incarnation_name(value)


def test_the_incarnation_the_master_makes_is_its_directory_name(tmp_path: Path) -> None:
    service = MasterService(guarded_config(tmp_path / "job"))
    try:
        made = service.kv_get(names.KV_INCARNATION)
        assert made is not None and incarnation_name(made) == made.decode()
        assert incarnation_name(None) == NO_INCARNATION
    finally:
        service.close()
