"""A flag that tunes the job's master is refused, naming it, where no master is started:
``flexjob run --master HOST:PORT`` (it joins a running one) and ``flexjob agent``. Before,
each was accepted and dropped."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flexjob.cli.main import app


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--stragglers", "exclude"], "--stragglers"),
        (["--straggler-ratio", "3"], "--straggler-ratio"),
        (["--straggler-window", "5"], "--straggler-window"),
        (["--last-call-timeout", "5"], "--last-call-timeout"),
        (["--heartbeat-timeout", "30"], "--heartbeat-timeout"),
        (["--rdzv-conf", "last_call_timeout=5"], "--rdzv-conf last_call_timeout"),
    ],
)
def test_run_with_a_running_master_refuses_the_masters_flags(
    tmp_path: Path, flags: list[str], named: str
) -> None:
    script = tmp_path / "train.py"
    script.write_text("")
    result = CliRunner().invoke(app, ["run", "--master", "127.0.0.1:1", *flags, str(script)])
    assert result.exit_code == 2, result.output
    assert f"error: {named} is a setting of the job's master" in result.output


def test_agent_refuses_the_masters_last_call_timeout(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("")
    args = ["agent", "--master", "127.0.0.1:1", "--rdzv-conf", "last_call_timeout=5"]
    result = CliRunner().invoke(app, [*args, str(script)])
    assert result.exit_code == 2, result.output
    assert "error: --rdzv-conf last_call_timeout is a setting of the job's master" in result.output


def test_run_with_a_running_master_refuses_plot(tmp_path: Path) -> None:
    """The timeline is in the running master's job dir: run's own would plot nothing."""
    script = tmp_path / "train.py"
    script.write_text("")
    args = ["run", "--master", "127.0.0.1:1", "--plot", str(tmp_path / "t.png")]
    result = CliRunner().invoke(app, [*args, str(script)])
    assert result.exit_code == 2, result.output
    assert "error: --plot draws the timeline of the master" in result.output
