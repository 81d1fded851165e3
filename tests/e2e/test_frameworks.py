"""The world's training code runs unchanged under flexjob: PyTorch Lightning's Trainer (ddp,
2 nodes), HF Accelerate, HF Transformers' Trainer on a tiny model built from a config, and
torch's own elastic snapshot pattern — under ``flexjob run --nnodes 2`` and ``flexjob submit``
on the local platform (Lightning also on the Kubernetes path, and with a worker SIGKILLed mid-
run). The scripts in ``tests/e2e/frameworks`` import nothing of flexjob."""

import signal
from pathlib import Path

import pytest

from tests.e2e.framework_jobs import Outcome, elastic_job, offline, run, start, submit
from tests.e2e.jobs import poll

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(200), pytest.mark.usefixtures("offline")]
__all__ = ["offline"]

LIGHTNING_STEPS = 2 * 8  # 2 epochs of 256 samples, batch 16, over 2 ranks


def lightning_ranks(output: str) -> dict[str, str]:
    """rank → its final line's ``world=.. node=.. steps=..`` (``lightning_ddp.py``)."""
    lines = Outcome(0, output).lines("lightning:")
    return {line.split()[0]: " ".join(line.split()[1:4]) for line in lines}


def assert_lightning_trained(code: int, output: str) -> None:
    assert code == 0, output
    assert lightning_ranks(output) == {
        "rank=0": f"world=2 node=0 steps={LIGHTNING_STEPS}",
        "rank=1": f"world=2 node=1 steps={LIGHTNING_STEPS}",
    }, output


def test_lightning_ddp_trains_on_two_nodes_under_flexjob_run(tmp_path: Path) -> None:
    out = run(tmp_path, "lightning_ddp.py")
    assert_lightning_trained(out.code, out.output)


def test_lightning_ddp_trains_under_flexjob_submit(tmp_path: Path, home: Path) -> None:
    out = submit(tmp_path, home, elastic_job("lightning", "lightning_ddp.py"))
    assert_lightning_trained(out.code, out.output)


def test_lightning_asking_for_more_nodes_than_the_run_gives_fails_at_once_naming_both(
    tmp_path: Path,
) -> None:
    out = run(
        tmp_path, "lightning_ddp.py", "--nodes", "3", flags=("--nnodes", "2", "--max-restarts", "3")
    )
    assert out.code == 1, out.output
    summary = out.output[out.output.index("root cause:") :]
    assert (
        "the script asks for 3 processes (Lightning: devices=1 x num_nodes=3), but this run's "
        "world has 2" in summary
    ), summary
    assert "a permanent error: no restart can fix it" in summary
    assert "restarting=True" not in out.output


def step_of(path: Path) -> tuple[int, int]:
    """The step a rank last wrote and its pid ((-1, 0) before its first)."""
    try:
        step, pid = path.read_text().split()
        return int(step), int(pid)
    except (OSError, ValueError):
        return -1, 0


def test_lightning_ddp_finishes_after_a_worker_is_sigkilled(tmp_path: Path) -> None:
    progress = tmp_path / "progress"
    progress.mkdir()
    job = start(
        tmp_path, "lightning_ddp.py", "--step-delay", "0.15", "--progress-dir", str(progress)
    )
    try:
        step_file = progress / "rank1.step"
        poll("rank 1 at step 3", lambda: step_of(step_file)[0] >= 3, 120)
        [victim] = [w for w in job.workers() if w.pid == step_of(step_file)[1]]
        victim.send_signal(signal.SIGKILL)
        code = job.wait(150)
    finally:
        job.stop()
    output = job.output()
    assert_lightning_trained(code, output)
    assert "restart=1" in output and "killed by SIGKILL" in output, output


def test_accelerate_trains_on_two_nodes_under_flexjob_run(tmp_path: Path) -> None:
    out = run(tmp_path, "accelerate_ddp.py")
    assert out.code == 0, out.output
    ranks = out.lines("accelerate:")
    assert [line.split()[:3] for line in ranks] == [
        ["rank=0", "world=2", "steps=8"], ["rank=1", "world=2", "steps=8"],
    ], out.output  # fmt: skip


def test_accelerate_trains_under_flexjob_submit(tmp_path: Path, home: Path) -> None:
    out = submit(tmp_path, home, elastic_job("accelerate", "accelerate_ddp.py"))
    assert out.code == 0, out.output
    assert len(out.lines("accelerate:")) == 2 and "world=2 steps=8" in out.output, out.output


def test_hf_trainer_trains_a_tiny_bert_on_two_nodes_under_flexjob_run(tmp_path: Path) -> None:
    out = run(tmp_path, "hf_trainer.py")
    assert out.code == 0, out.output
    assert out.lines("hf-trainer:") == [
        "rank=0 world=2 steps=4 run_id=job", "rank=1 world=2 steps=4 run_id=job",
    ], out.output  # fmt: skip


def test_hf_trainer_trains_under_flexjob_submit(tmp_path: Path, home: Path) -> None:
    out = submit(tmp_path, home, elastic_job("hf", "hf_trainer.py"))
    assert out.code == 0, out.output
    assert out.lines("hf-trainer:") == [
        "rank=0 world=2 steps=4 run_id=hf", "rank=1 world=2 steps=4 run_id=hf",
    ], out.output  # fmt: skip


def assert_resumed_from_snapshot(code: int, output: str) -> None:
    """Rank 1 failed at epoch 2 of the first attempt; the restart resumed at epoch 2."""
    assert code == 0, output
    lines = Outcome(0, output).lines("snapshot:")
    assert "rank=1 fails at epoch 2" in lines, output
    assert "rank=0 resumed_from=2 restart=1" in lines, output
    assert "rank=1 resumed_from=2 restart=1" in lines, output
    assert lines.count("rank=0 done epochs=4") == 1 and lines.count("rank=1 done epochs=4") == 1


def test_a_torchrun_snapshot_script_resumes_after_a_restart_under_flexjob_run(
    tmp_path: Path,
) -> None:
    snapshot = str(tmp_path / "snapshot.pt")
    out = run(tmp_path, "snapshot_resume.py", "--snapshot", snapshot, "--fail-at-epoch", "2")
    assert_resumed_from_snapshot(out.code, out.output)


def test_a_torchrun_snapshot_script_resumes_after_a_restart_under_flexjob_submit(
    tmp_path: Path, home: Path
) -> None:
    snapshot = str(tmp_path / "snapshot.pt")
    body = elastic_job("snapshot", "snapshot_resume.py", "--snapshot", snapshot,
                       "--fail-at-epoch", "2", max_restarts=2)  # fmt: skip
    out = submit(tmp_path, home, body)
    assert_resumed_from_snapshot(out.code, out.output)


async def test_lightning_ddp_trains_on_the_kubernetes_path(tmp_path: Path) -> None:
    from tests.e2e.k8s_cluster import cluster

    name = "lightning-k8s"
    async with cluster(tmp_path) as c:
        await c.apply_job(elastic_job(name, "lightning_ddp.py"))
        phase = await c.wait_phase(name, ("Succeeded", "Failed"), 180)
        output = "\n".join(c.log(f"{name}-worker-{i}") for i in range(2))
        assert phase == "Succeeded", output + c.log(f"{name}-master-0")
        assert_lightning_trained(0, output)
