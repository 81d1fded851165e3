"""torchrun's worker contract under ``flexjob run``: every variable torchrun sets, with
torchrun's meaning (docs/elastic-run.md's table); the error file honoured in the root cause;
permanent errors end the job at once, without restarts."""

import json
from pathlib import Path

import pytest

from tests.e2e.framework_jobs import run

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]


def test_every_worker_gets_torchruns_worker_environment(tmp_path: Path) -> None:
    out = run(
        tmp_path, "torchrun_env.py",
        flags=("--nnodes", "2", "--nproc-per-node", "2", "--max-restarts", "2",
               "--rdzv-id", "contract"),
    )  # fmt: skip
    assert out.code == 0, out.output
    seen = sorted((json.loads(s) for s in out.lines("torchrun-env:")), key=lambda e: e["RANK"])
    assert [e["RANK"] for e in seen] == ["0", "1", "2", "3"], out.output
    for rank, e in enumerate(seen):
        assert e["launched"] == "True"
        assert e["WORLD_SIZE"] == e["ROLE_WORLD_SIZE"] == "4"
        assert e["ROLE_RANK"] == str(rank)
        assert (e["LOCAL_RANK"], e["LOCAL_WORLD_SIZE"]) == (str(rank % 2), "2")
        assert (e["GROUP_RANK"], e["GROUP_WORLD_SIZE"]) == (str(rank // 2), "2")
        assert e["ROLE_NAME"] == "default"
        assert e["TORCHELASTIC_RUN_ID"] == "contract"
        assert e["TORCHELASTIC_RESTART_COUNT"] == "0"
        assert e["TORCHELASTIC_MAX_RESTARTS"] == "2"
        assert e["TORCHELASTIC_ERROR_FILE"].endswith(".error.json")
        assert e["OMP_NUM_THREADS"] == "1"
    assert len({e["TORCHELASTIC_ERROR_FILE"] for e in seen}) == 4
    assert "Setting OMP_NUM_THREADS environment variable for each process to be 1" in out.output


def test_an_error_recorded_by_torchs_record_is_the_root_cause(tmp_path: Path) -> None:
    out = run(
        tmp_path, "torchrun_env.py", "--record", flags=("--nnodes", "2", "--max-restarts", "0")
    )
    assert out.code == 1, out.output
    summary = out.output[out.output.index("root cause:") :]
    assert "rank 1 (local rank 0)" in summary
    assert "error: ValueError: bad value from rank 1" in summary


PERMANENT = {
    "ModuleNotFoundError": "import flexjob_no_such_module\n",
    "SyntaxError": "print('unclosed'\n",
}


@pytest.mark.parametrize("kind", sorted(PERMANENT))
def test_a_permanent_error_fails_the_run_at_once_naming_rank_and_error(
    tmp_path: Path, kind: str
) -> None:
    train = tmp_path / "train.py"
    train.write_text(PERMANENT[kind])
    with_restarts = ("--nnodes", "2", "--max-restarts", "3")
    out = run(tmp_path, str(train), flags=with_restarts)
    assert out.code == 1, out.output
    summary = out.output[out.output.index("root cause:") :]
    assert "rank 0 (local rank 0)" in summary or "rank 1 (local rank 0)" in summary
    assert f"error: {kind}: " in summary
    assert "a permanent error: no restart can fix it" in summary
    assert "restarting=True" not in out.output
