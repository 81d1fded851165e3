"""The worker variables an agent sets at a start (torchrun's meanings) and the error file it
reads back: torch's own ``@record`` writes it, ``error_message`` reads it."""

import json
import subprocess
import sys
from pathlib import Path

from flexjob.agent.torchrun_env import (
    error_message,
    error_path,
    explained,
    launch_env,
    permanent,
    sets_omp_threads,
    world_mismatch,
    write_error,
)
from flexjob.api import names


def start_env(nproc: int, given: dict[str, str] | None = None) -> dict[str, str]:
    return launch_env(
        run_id="job-a", max_restarts=3, restart_count=2, error_file="/x/e.json",
        nproc_per_node=nproc, given=given or {},
    )  # fmt: skip


def test_a_worker_starts_with_torchruns_run_id_restarts_error_file_and_role() -> None:
    assert start_env(1) == {
        names.ENV_TORCHELASTIC_RUN_ID: "job-a",
        names.ENV_TORCHELASTIC_RESTART_COUNT: "2",
        names.ENV_TORCHELASTIC_MAX_RESTARTS: "3",
        names.ENV_TORCHELASTIC_ERROR_FILE: "/x/e.json",
        names.ENV_ROLE_NAME: "default",
    }


def test_omp_threads_is_one_only_with_several_workers_a_node_and_none_given() -> None:
    assert start_env(2)[names.ENV_OMP_NUM_THREADS] == "1"
    assert names.ENV_OMP_NUM_THREADS not in start_env(1)
    assert names.ENV_OMP_NUM_THREADS not in start_env(2, {"OMP_NUM_THREADS": "4"})
    assert not sets_omp_threads(2, {"OMP_NUM_THREADS": "4"})


def test_the_error_file_sits_beside_the_status_file_one_per_process() -> None:
    assert error_path(Path("/r/w-0.1.77.status.json")) == Path("/r/w-0.1.77.error.json")


RECORDED = """
import sys
from torch.distributed.elastic.multiprocessing.errors import record

@record
def main():
    raise KeyError("no such column")

main()
"""


def test_an_error_written_by_torchs_record_is_read_back(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    env = {names.ENV_TORCHELASTIC_ERROR_FILE: str(path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", RECORDED], env=env, capture_output=True)
    assert done.returncode == 1, done.stderr
    assert error_message(path) == "KeyError: 'no such column'"


def test_the_bootstraps_record_matches_torchs_and_never_overwrites_one(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    write_error(str(path), "SyntaxError", "invalid syntax (t.py, line 1)", "tb", 1700000000)
    write_error(str(path), "RuntimeError", "later", "tb", 1700000001)
    body = json.loads(path.read_text())
    assert body["message"]["extraInfo"] == {"py_callstack": "tb", "timestamp": "1700000000"}
    assert error_message(path) == "SyntaxError: invalid syntax (t.py, line 1)"


def test_no_file_or_a_foreign_one_is_no_error(tmp_path: Path) -> None:
    assert error_message(tmp_path / "none.json") is None
    (tmp_path / "odd.json").write_text("[1, 2]")
    assert error_message(tmp_path / "odd.json") is None
    (tmp_path / "plain.json").write_text(json.dumps({"message": "OSError: disk"}))
    assert error_message(tmp_path / "plain.json") == "OSError: disk"


def test_only_errors_no_restart_can_fix_are_permanent() -> None:
    assert permanent("ModuleNotFoundError: No module named 'x'")
    assert permanent("SyntaxError: invalid syntax (t.py, line 1)")
    assert permanent("IndentationError: unexpected indent")
    assert not permanent("RuntimeError: Connection reset by peer")
    assert not permanent("ImportError: cannot import name 'y'")
    assert not permanent(None) and not permanent("")


LIGHTNING_REFUSAL = (
    "ValueError: You set `devices=1` and `num_nodes=3` in Lightning, but the product (1 * 3) "
    "does not match the world size (2)."
)


def test_a_framework_refusing_the_worlds_size_is_one_line_naming_both() -> None:
    line = world_mismatch(LIGHTNING_REFUSAL)
    assert line == (
        "the script asks for 3 processes (Lightning: devices=1 x num_nodes=3), but this run's "
        "world has 2 (its nodes x --nproc-per-node): make them match"
    )
    assert explained(LIGHTNING_REFUSAL) == line
    assert permanent(LIGHTNING_REFUSAL)


def test_other_errors_are_shown_as_recorded_and_no_world_mismatch() -> None:
    for message in ("ValueError: bad value", "RuntimeError: world size 2", ""):
        assert world_mismatch(message) is None
        assert explained(message) == message
