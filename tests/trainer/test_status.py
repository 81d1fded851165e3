"""The trainer's status file (``trainer.status``): what one write says is what the agent reads."""

from pathlib import Path

from flexjob.trainer.status import StatusWriter, read_status


def test_a_written_status_is_read_back_with_its_flags(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    writer = StatusWriter(str(path))
    writer.write(
        round=3, step=7, samples=56, epoch=1, world_size=2, force=True, step_seconds=0.25, idle=True
    )
    got = read_status(path)
    assert got is not None
    assert (got.round, got.step, got.samples, got.epoch, got.world_size) == (3, 7, 56, 1, 2)
    assert (got.step_seconds, got.idle, got.closed) == (0.25, True, False)


def test_a_status_written_without_flags_says_not_measured_and_busy(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    StatusWriter(str(path)).write(round=1, step=0, samples=0, epoch=0, world_size=1, force=True)
    got = read_status(path)
    assert got is not None
    assert (got.step_seconds, got.idle, got.closed) == (0.0, False, False)


def test_a_write_within_the_interval_is_skipped_unless_forced(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    writer = StatusWriter(str(path), interval_s=3600.0)
    writer.write(round=1, step=1, samples=8, epoch=0, world_size=1)
    writer.write(round=1, step=2, samples=16, epoch=0, world_size=1)
    skipped = read_status(path)
    writer.write(round=1, step=3, samples=24, epoch=0, world_size=1, closed=True, force=True)
    forced = read_status(path)
    assert skipped is not None and skipped.step == 1
    assert forced is not None and (forced.step, forced.closed) == (3, True)
