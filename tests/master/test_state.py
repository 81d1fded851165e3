from pathlib import Path

from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import MasterConfig, PersistenceConfig
from flexjob.master.service import MasterService
from flexjob.master.state_file import StateFile
from flexjob.rpc.messages import NodeRef


def test_snapshot_is_replaced_without_leaving_temp_files(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "s.json")
    state.save({"a": 1})
    state.save({"a": 2})
    assert state.load() == ({"a": 2}, [])
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]


def test_a_torn_last_journal_line_is_ignored(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "s.json")
    state.append({"s": 1})
    state.close()
    with state.journal_path.open("a") as f:
        f.write('{"s": 2')  # killed mid-line
    assert state.load() == (None, [{"s": 1}])


def test_journal_entries_survive_a_kill_between_rotation_and_snapshot(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "s.json")
    state.append({"s": 1})
    state.rotate_journal()  # a snapshot was being taken ...
    state.append({"s": 2})  # ... reports went on, and the master died before saving it
    assert state.load() == (None, [{"s": 1}, {"s": 2}])


def service(tmp_path: Path, snapshot_every: int = 1000) -> MasterService:
    config = MasterConfig(
        job_dir=str(tmp_path),
        datasets=(Dataset(size=100, shard_size=1),),
        host_store=False,
        persistence=PersistenceConfig(snapshot_every=snapshot_every),
    )
    return MasterService(config)


def test_reports_in_the_journal_are_replayed_after_a_restart(tmp_path: Path) -> None:
    node = NodeRef("w")
    first = service(tmp_path)
    for _ in range(3):
        first.report_shard(node, "", first.get_shard(node, "").shard_id)
    second = service(tmp_path)
    assert second.get_progress(node, "").shards_done == 3


def test_a_snapshot_every_n_entries_keeps_the_journal_short(tmp_path: Path) -> None:
    node = NodeRef("w")
    svc = service(tmp_path, snapshot_every=10)
    for _ in range(25):  # 50 entries: a hand-out and a report each
        svc.report_shard(node, "", svc.get_shard(node, "").shard_id)
    header, *entries = (tmp_path / "master_state.journal").read_text().splitlines()
    assert header == '{"gen":1}'  # the generation of the master that wrote it
    assert 0 < len(entries) < 10


def test_a_failed_snapshot_keeps_every_journal_entry(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "s.json")
    state.append({"s": 1})
    state.rotate_journal()  # snapshot 1 failed to save: the old journal stays
    state.append({"s": 2})
    state.rotate_journal()  # snapshot 2 starts
    state.append({"s": 3})
    assert state.load() == (None, [{"s": 1}, {"s": 2}, {"s": 3}])
