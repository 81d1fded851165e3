"""Straggler nodes through ``flexjob run``: real processes, one node's trainer made slow by
the test script (``scripts/slow_node.py``: it sleeps in every step). The master finds it from
the trainers' own step times, reports it and, with ``--stragglers exclude``, trains on without
it; every sample is trained exactly once either way."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from flexjob.observe import timeline
from tests.e2e.jobs import running

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

SCRIPT = str(Path(__file__).with_name("scripts") / "slow_node.py")
SIZE = 480
THREE = ("--nnodes", "2:3", "--start-nodes", "3", "--straggler-window", "3")


def trained(samples_dir: Path) -> Counter[tuple[int, int]]:
    """How many committed steps trained each (epoch, index)."""
    counts: Counter[tuple[int, int]] = Counter()
    for path in samples_dir.glob("*.samples"):
        for line in path.read_text().splitlines():
            epoch, indices = line.split(" ")
            counts.update((int(epoch), int(i)) for i in indices.split(","))
    return counts


def assert_every_sample_once(samples_dir: Path) -> None:
    counts = trained(samples_dir)
    lost = [i for i in range(SIZE) if (0, i) not in counts]
    twice = {k: n for k, n in counts.items() if n > 1}
    assert not lost and not twice, f"lost {lost[:10]}..., trained again {list(twice)[:10]}..."
    assert set(counts) == {(0, i) for i in range(SIZE)}


@pytest.fixture
def slow_worker_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    samples = tmp_path / "samples"
    monkeypatch.setenv("SAMPLES_DIR", str(samples))
    monkeypatch.setenv("STRAGGLE_NODE", "worker-2")
    monkeypatch.setenv("STRAGGLE_SLEEP", "0.5")
    return samples


def narration(job_dir: Path) -> list[str]:
    return [text for _, text in timeline.narrate(timeline.read(job_dir).events)]


def test_a_slow_node_is_excluded_and_the_others_train_every_sample_once(
    tmp_path: Path, slow_worker_2: Path
) -> None:
    flags = (*THREE, "--stragglers", "exclude")
    with running(tmp_path, *flags, script=SCRIPT, script_args=("--size", str(SIZE))) as job:
        assert job.wait(180) == 0, job.output()
        log = job.master_log()
        assert re.search(r"event=node_straggling .*node=worker-2 .*action=excluded", log), log
        assert re.search(r"round_completed .* world_size=2 members=worker-[01],worker-[01]", log)
        told = narration(job.job_dir)
        assert any(t.startswith("node worker-2 straggling:") and "(excluded)" in t for t in told)
        assert any(t.startswith("node worker-2 lost, world 3 → 2") for t in told), told
        assert "excluded from the job by its master" in job.output()
        assert job.output().count("slow_node: done") == 2, job.output()  # worker-2 stopped
    assert_every_sample_once(slow_worker_2)


def test_a_slow_node_is_reported_and_kept_by_default(tmp_path: Path, slow_worker_2: Path) -> None:
    with running(tmp_path, *THREE, script=SCRIPT, script_args=("--size", str(SIZE))) as job:
        assert job.wait(180) == 0, job.output()
        log = job.master_log()
        assert re.search(r"event=node_straggling .*node=worker-2 .*action=reported", log), log
        after = log.split("event=node_straggling", 1)[1]
        assert "world_size=2" not in after and "node_dead" not in after  # nobody left
        assert job.output().count("slow_node: done") == 3, job.output()
    assert_every_sample_once(slow_worker_2)


def test_preflight_drops_a_node_whose_check_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    samples = tmp_path / "samples"
    monkeypatch.setenv("SAMPLES_DIR", str(samples))
    monkeypatch.setenv("PREFLIGHT_FAIL_NODE", "worker-2")
    flags = ("--nnodes", "2:3", "--start-nodes", "3", "--preflight")
    with running(tmp_path, *flags, script=SCRIPT, script_args=("--size", str(SIZE))) as job:
        assert job.wait(180) == 0, job.output()
        log = job.master_log()
        assert re.search(r"event=preflight_failed .*node=worker-2 .*action=excluded", log), log
        assert "device error (injected by the test)" in log
        told = narration(job.job_dir)
        assert any(t.startswith("node worker-2 failed the pre-flight check") for t in told), told
        assert job.output().count("slow_node: done") == 2, job.output()
    assert_every_sample_once(samples)
    assert not any(p.read_text() for p in samples.glob("worker-2.*.samples"))  # never trained


def test_a_bad_straggler_option_is_refused_naming_it(tmp_path: Path) -> None:
    for flags, message in (
        (("--straggler-ratio", "1"), "--straggler-ratio) must be > 1, got 1.0"),
        (("--stragglers", "drop"), "'drop' is not one of"),
    ):
        with running(tmp_path, *flags, script=SCRIPT) as job:
            assert job.wait(60) == 2, job.output()
            assert message in job.output(), job.output()
