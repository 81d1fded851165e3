"""Worker output: torchrun's --redirects/--tee values and what reaches console and files."""

import subprocess
import sys
from pathlib import Path

import pytest

from flexjob.agent.output import OutputConfig, Std, WorkerOutput, parse_std


def test_std_values_are_torchruns() -> None:
    assert parse_std("3", "--tee") is Std.ALL
    assert parse_std("0:1,1:2", "--tee") == {0: Std.OUT, 1: Std.ERR}


@pytest.mark.parametrize("text", ["4", "x", "0:9", "a:1"])
def test_bad_std_values_name_the_option_and_the_allowed_values(text: str) -> None:
    with pytest.raises(ValueError, match="--redirects must be 0-3"):
        parse_std(text, "--redirects")


def test_redirects_need_a_log_dir() -> None:
    with pytest.raises(ValueError, match="--redirects 3 needs --log-dir"):
        OutputConfig(redirects="3")


@pytest.mark.parametrize(
    ("redirects", "tee", "console", "files"),
    [
        ("0", "0", Std.ALL, Std.NONE),
        ("3", "0", Std.NONE, Std.ALL),
        ("0", "2", Std.ALL, Std.ERR),
        ("1", "0", Std.ERR, Std.OUT),
        ("0:3", "0", Std.NONE, Std.ALL),  # local rank 0 only
    ],
)
def test_streams_of_local_rank_zero(redirects: str, tee: str, console: Std, files: Std) -> None:
    config = OutputConfig(log_dir="/tmp/x", redirects=redirects, tee=tee)
    assert config.streams(0) == (console, files)


def test_lines_are_prefixed_teed_to_files_and_the_stderr_tail_kept(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code = "import sys; print('out line'); print('err 1', file=sys.stderr); sys.exit('err 2')"
    config = OutputConfig(log_dir=str(tmp_path), tee="3")
    output = WorkerOutput(config, "worker-0", 0, lambda: "[worker-0/rank1]")
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    output.start(proc.stdout, proc.stderr)
    proc.wait()
    output.join()
    out, err = capfd.readouterr()
    assert "[worker-0/rank1]: out line\n" in out
    assert "[worker-0/rank1]: err 1\n[worker-0/rank1]: err 2\n" in err
    assert (tmp_path / "worker-0" / "0" / "stdout.log").read_text() == "out line\n"
    assert (tmp_path / "worker-0" / "0" / "stderr.log").read_text() == "err 1\nerr 2\n"
    assert output.tail() == ["err 1", "err 2"]
    assert output.ended_at is not None
