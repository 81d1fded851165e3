"""One master per job state, and every acknowledged report durable: a second master on the same
job directory refuses to start naming the holder, a master whose lock was taken from it writes
nothing more, journal lines of an older master generation are not replayed, renames are
fsynced with their directory, and a master SIGKILLed at random points of a report storm, many
times, restores exactly the reports it acknowledged and every hand-out it acknowledged (the
shard still held by its node, unless a report of it was in flight). Real master processes on
127.0.0.1."""

import json
import os
import random
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest

from flexjob.api.errors import FlexjobError
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import MasterConfig
from flexjob.core.training.shards import ShardManager, ShardState
from flexjob.master.launch import spawn_master
from flexjob.master.process import EXIT_STATE_HELD
from flexjob.master.service import MasterService
from flexjob.master.state_file import StateFile, write_atomic
from flexjob.master.state_lock import LOCK_FILE
from flexjob.platform.ports import free_port
from flexjob.rpc.client import MasterClient
from tests.support.crash_master import start_master_process
from tests.support.guarded_master import GuardedMaster, guarded_config, started_world
from tests.support.masters import master_config
from tests.support.polling import wait_until

KILLS = 20
STORM_CLIENTS = 6


def _state_files(job_dir: Path) -> tuple[bytes, bytes]:
    state = job_dir / "master_state.json"
    journal = state.with_suffix(".journal")
    return state.read_bytes(), journal.read_bytes() if journal.exists() else b""


def test_a_second_master_on_the_same_job_dir_refuses_to_start_naming_the_holder(
    tmp_path: Path,
) -> None:
    job = tmp_path / "job"
    config = guarded_config(job, port=free_port())
    first = start_master_process(config)
    try:
        with MasterClient(f"127.0.0.1:{config.port}", "w", token="", retry_deadline=30) as c:
            held = c.lease_shards(1).shards[0].shard_id
            before = _state_files(job)
            second = spawn_master(config.with_overrides(port=free_port()), wait=False)
            assert second.process.wait(60) == EXIT_STATE_HELD
            log = (job / "master.log").read_text()
            assert "another master holds this job's state" in log
            assert f"pid={first.pid} host=" in log
            assert _state_files(job) == before  # it deleted and wrote nothing
            assert c.lease_shards(0, done=[held]).accepted == (True,)  # the first serves on
    finally:
        first.kill()
        first.join()


def test_a_master_whose_lock_file_was_replaced_writes_nothing_more(tmp_path: Path) -> None:
    master = GuardedMaster(guarded_config(tmp_path / "job"))
    try:
        held = started_world(master)
        lock = tmp_path / "job" / LOCK_FILE
        lock.unlink()
        lock.write_text("pid=1 host=another-master\n")  # another master took the state
        before = _state_files(tmp_path / "job")
        with master.client("worker-0") as c, pytest.raises(FlexjobError, match="unreachable"):
            c.lease_shards(0, done=[held["worker-0"]])  # UNAVAILABLE until its deadline
        assert _state_files(tmp_path / "job") == before
    finally:
        master.server.stop(0)
    lock.unlink()
    restored = MasterService(guarded_config(tmp_path / "job"))
    try:
        assert restored.view().shards_done == 0  # the fenced master's report is not there
    finally:
        restored.close()


def test_journal_lines_of_an_older_master_generation_are_not_replayed(tmp_path: Path) -> None:
    path = tmp_path / "master_state.json"
    stale = StateFile(path)
    stale.generation = 1
    stale.append({"d": "", "s": 3, "w": "stale"})
    stale.close()
    write_atomic(path, json.dumps({"generation": 2}))  # a newer master restored meanwhile
    assert StateFile(path).load() == ({"generation": 2}, [])
    current = StateFile(path)
    current.generation = 2
    current.rotate_journal()
    current.append({"d": "", "s": 4, "w": "w"})
    assert current.load()[1] == [{"d": "", "s": 4, "w": "w"}]


def test_every_master_start_is_a_new_generation(tmp_path: Path) -> None:
    generations = []
    for _ in range(3):
        service = MasterService(guarded_config(tmp_path / "job"))
        service.close()
        generations.append(json.loads((tmp_path / "job" / "master_state.json").read_text()))
    assert [g["generation"] for g in generations] == [1, 2, 3]


def test_a_rename_and_a_new_journal_are_fsynced_with_their_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:  # the real fsync, and which file it synced
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    state = StateFile(tmp_path / "master_state.json", fsync=True)
    state.save_text("{}")
    temp, directory = synced  # the temp file's data, then the rename in the directory
    assert temp.startswith(str(tmp_path / ".master_state.json.")) and directory == str(tmp_path)
    synced.clear()
    state.append({"s": 1})
    assert synced == [str(tmp_path), str(tmp_path / "master_state.journal")]
    synced.clear()
    state.rotate_journal()
    assert synced == [str(tmp_path)]
    assert MasterConfig().persistence.fsync is True  # the default: acknowledged means on disk


@dataclass
class Ledger:
    """What the storm's clients were told: the reports acknowledged, per client the shards
    handed out to it (acknowledged) and not reported yet, and per client the reports of the
    call in flight (sent, not answered yet)."""

    acked: set[int] = field(default_factory=set)
    held: dict[str, list[int]] = field(default_factory=dict)
    in_flight: dict[str, list[int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self) -> tuple[set[int], dict[str, list[int]], set[int]]:
        with self.lock:
            in_flight = {s for ids in self.in_flight.values() for s in ids}
            return set(self.acked), dict(self.held), in_flight


def _storm(address: str, worker: str, stop: threading.Event, ledger: Ledger) -> None:
    """Lease a shard and report the last one, call after call, through master restarts (a
    call in flight when the master dies is retried until the next one answers)."""
    try:
        with MasterClient(
            address, worker, token="", retry_deadline=60, max_backoff=0.02, shard_stream=False
        ) as c:
            done: list[int] = []
            while not stop.is_set():
                with ledger.lock:
                    ledger.in_flight[worker] = done
                lease = c.lease_shards(1, done=done)
                done = [s.shard_id for s in lease.shards]
                with ledger.lock:
                    reported = ledger.in_flight[worker]
                    ledger.acked.update(
                        s for s, ok in zip(reported, lease.accepted, strict=True) if ok
                    )
                    ledger.held[worker] = done
                    ledger.in_flight[worker] = []
    except Exception as exc:  # asserted in the test's thread
        ledger.errors.append(f"{worker}: {exc}")


def _reached(ledger: Ledger, floor: int) -> bool:
    return len(ledger.acked) >= floor or bool(ledger.errors)


def _restored(config: MasterConfig) -> tuple[set[int], dict[int, str]]:
    """The shards a master restoring ``config``'s state counts as done, and those it has
    handed out (to whom) (a restart: it restores snapshot and journal, and saves one
    snapshot of the result)."""
    MasterService(config).close()
    saved = json.loads(Path(config.state_path or "").read_text())["shards"][""]
    mgr = ShardManager(config.datasets[0].splitter())
    mgr.restore(saved)
    done = {s for s in range(mgr.shards_per_epoch) if mgr.state_of(s) is ShardState.DONE}
    return done, mgr.doing()


def _restored_done(config: MasterConfig) -> set[int]:
    return _restored(config)[0]


def test_every_acknowledged_report_and_hand_out_survives_repeated_sigkills_of_the_master(
    tmp_path: Path,
) -> None:
    config = master_config(
        "crash",
        tmp_path / "job",
        datasets=(Dataset(size=20_000, shard_size=1),),
        port=free_port(),
        persistence__snapshot_every=97,
        node_health__heartbeat_timeout=600.0,
    )
    rng = random.Random(34)
    ledger = Ledger()
    stop = threading.Event()
    master = start_master_process(config)
    address = f"127.0.0.1:{config.port}"
    storm = [
        threading.Thread(target=_storm, args=(address, f"w{i}", stop, ledger))
        for i in range(STORM_CLIENTS)
    ]
    for t in storm:
        t.start()
    started = time.monotonic()
    # acknowledged, restored, in flight, hand-outs held at each kill
    kills: list[tuple[int, int, int, int]] = []
    try:
        for _ in range(KILLS):
            floor = len(ledger.acked) + rng.randint(5, 150)
            wait_until(partial(_reached, ledger, floor), timeout=30, what="reports")
            time.sleep(rng.uniform(0, 0.02))  # a random point of the storm, not a check
            master.kill()
            master.join()
            acked, held, in_flight = ledger.read()
            restored, doing = _restored(config)
            # Every acknowledged report is there; besides them only reports still in flight.
            assert acked <= restored <= acked | in_flight, (len(acked), len(restored))
            # Every acknowledged hand-out is still its node's, or done by a report in flight.
            lost = {
                (worker, s)
                for worker, ids in held.items()
                for s in ids
                if doing.get(s) != worker and not (s in restored and s in in_flight)
            }
            assert not lost, lost
            handed_out = sum(len(ids) for ids in held.values())
            kills.append((len(acked), len(restored), len(in_flight), handed_out))
            master = start_master_process(config)
    finally:
        stop.set()
        for t in storm:
            t.join(90)
        master.kill()
        master.join()
    assert not ledger.errors
    assert len(kills) == KILLS
    assert _restored_done(config) == ledger.acked  # the calls in flight were answered since
    print(
        f"kills (acknowledged, restored, in flight, hand-outs held): {kills}; at the end "
        f"{len(ledger.acked)}"
    )
    assert time.monotonic() - started < 90
