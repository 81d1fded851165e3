"""PS-set changes end to end in one process: a real job master (its PS-set driver) and real
``run_ps`` replicas on loopback gRPC. A trainer's ``PsSet`` keeps pushing while the set grows
2 -> 3 and shrinks back to 2; every row comes over exactly once (row by row, not a sum), no
push is lost or doubled, and the calls refused during the change are sent again to the new
owners. A paused PS refuses data calls and a client of an older set is sent to re-resolve."""

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from flexjob.api import ReplicaType, names
from flexjob.api.errors import PsSetChangedError
from flexjob.core.ps.set_change import MemberState
from flexjob.master.main import MasterHandle, start_master
from flexjob.rpc.client import MasterClient
from flexjob.rpc.ps_client import PsClient
from flexjob.rpc.ps_control import PsControlClient
from flexjob.rpc.ps_registry import read_members, read_set
from flexjob.trainer.ps_set import PsSet
from tests.support.masters import master_config, serving
from tests.support.polling import wait_until

from .conftest import MODEL, Replicas, set_version

IDS = np.arange(1000, dtype=np.int64)


@pytest.fixture
def master(tmp_path: Path) -> Iterator[MasterHandle]:
    config = master_config("ps-set", tmp_path / "master", ps__num_ps=2)
    yield from serving(start_master(config, token=""))


def every_row(ps: PsSet) -> np.ndarray:
    rows, split = ps.lookup("user", IDS)
    return rows[split.inverse]


@pytest.mark.parametrize("combined", [False, True], ids=["push-rows", "push-with-next-lookup"])
def test_the_set_grows_and_shrinks_while_a_trainer_pushes_and_no_row_or_push_is_lost(
    master: MasterHandle, replicas: Replicas, combined: bool
) -> None:
    """``combined``: each step's gradients travel with the next step's lookup (PushLookup,
    as ``PsEmbedding(defer_push=True)`` sends them); a refused part is re-sent by itself."""
    replicas.first_set(2)
    with MasterClient(master.address, "probe") as probe:
        first = read_set(probe.kv_get)
    assert first is not None and first.num_ps == 2
    ps = PsSet(first.addresses, version=first.version, master=master.address)
    ps.configure(MODEL.optimizer, MODEL.tables, MODEL.dense)
    pushes = 0
    one = np.ones((IDS.size, 4), dtype=np.float32)

    def push_until(done: threading.Event) -> None:
        nonlocal pushes
        kept: tuple[np.ndarray, np.ndarray] | None = None
        while not done.is_set():  # SGD lr 0.5, init 0: each push takes 0.5 off every row
            if combined:
                _, split = ps.lookup("user", IDS, push=kept)
                pushes += kept is not None
                kept = (split.unique, one[: split.unique.size])
                continue
            _, split = ps.lookup("user", IDS)
            for call in ps.push_rows("user", split, one[: split.unique.size]):
                call.result()
            pushes += 1
        if kept is not None:  # the last step's gradients, with an empty lookup
            ps.lookup("user", IDS[:0], push=kept)
            pushes += 1

    def change_to(target: int, change: Callable[[], None]) -> None:
        before = set_version(master.service)
        done = threading.Event()
        trainer = threading.Thread(target=push_until, args=(done,))
        trainer.start()
        wait_until(lambda: pushes > 2, timeout=30, what="pushes before the change")
        change()
        wait_until(
            lambda: set_version(master.service) > before, timeout=60, what=f"the set of {target}"
        )
        wait_until(lambda: ps.num_ps == target, timeout=60, what="the trainer re-resolved")
        at = pushes
        wait_until(lambda: pushes > at + 2, timeout=30, what="pushes after the change")
        done.set()
        trainer.join(timeout=60)
        np.testing.assert_array_equal(every_row(ps), np.full((IDS.size, 4), -0.5 * pushes))

    change_to(3, lambda: replicas.start(2, 3))
    change_to(2, lambda: replicas.stop(2))
    members = read_members(master.service.kv_get)
    assert members[2].state is MemberState.LEFT and members[2].totals is not None
    assert ps.version == 3 and ps.num_ps == 2
    ps.close()


def test_a_paused_ps_refuses_data_calls_and_an_older_client_is_sent_to_re_resolve(
    master: MasterHandle, replicas: Replicas
) -> None:
    replicas.first_set(2)
    raw = master.service.kv_get(f"{names.KV_PS_ADDRESS_PREFIX}0")
    assert raw
    address = raw.decode()
    client, newer = PsClient(address, set_version=1), PsClient(address, set_version=4)
    try:
        with PsControlClient(address) as control:
            client.configure(MODEL, 2)
            assert control.pause() == 0
            with pytest.raises(PsSetChangedError, match="paused for a PS-set change"):
                client.lookup("user", IDS[:3])
            assert client.stats().index == 0  # stats still answer
            control.resume(4)
        with pytest.raises(PsSetChangedError, match="caller uses PS set 1, this PS serves set 4"):
            client.lookup("user", IDS[:3])
        assert newer.lookup("user", IDS[:3]).shape == (3, 4)
    finally:
        client.close()
        newer.close()


def test_each_ps_reports_its_load_to_the_masters_stats(
    master: MasterHandle, replicas: Replicas
) -> None:
    replicas.first_set(2)
    ps = PsSet.from_master(master.address)
    ps.configure(MODEL.optimizer, MODEL.tables, MODEL.dense)
    for _ in range(20):
        ps.lookup("user", IDS)

    def loaded() -> bool:
        ps.lookup("user", IDS)  # calls in every report's window
        nodes, _ = master.service.stats_snapshot()
        return all(
            f"ps-{i}" in nodes
            and nodes[f"ps-{i}"].replica_type is ReplicaType.PS
            and nodes[f"ps-{i}"].latest.partition_bytes > 0
            and nodes[f"ps-{i}"].latest.memory_bytes > 0
            and nodes[f"ps-{i}"].latest.requests_per_second > 0
            for i in range(2)
        )

    wait_until(loaded, timeout=30, interval=0.2, what="PS load in the master's stats")
    ps.close()
