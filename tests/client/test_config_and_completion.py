"""The config file sits under the environment variables and a command's flags; shell
completion completes commands and options."""

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from flexjob.cli.main import app
from flexjob.client.config import ENV_CONFIG, KEYS


@pytest.fixture
def flexjob(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """``flexjob ARGS`` in this process with only the given variables set (each variable the
    config file may set is restored afterwards)."""
    for name in [*KEYS.values(), ENV_CONFIG, "XDG_CONFIG_HOME"]:
        monkeypatch.setenv(name, "")

    def run(*args: str, env: dict[str, str]) -> Result:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return CliRunner().invoke(app, list(args))

    return run


def test_config_file_home_is_used_unless_the_environment_names_another(
    tmp_path: Path, flexjob: Callable[..., Result]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"home: {tmp_path / 'from-file'}\nplatform: local\n")
    done = flexjob("get", env={"FLEXJOB_CONFIG": str(config)})
    assert done.exit_code == 0, done.output
    assert (tmp_path / "from-file" / "flexjob.sqlite").exists()
    env_home = tmp_path / "from-env"
    done = flexjob("get", env={"FLEXJOB_HOME": str(env_home)})
    assert done.exit_code == 0, done.output
    assert (env_home / "flexjob.sqlite").exists()


def test_a_flag_beats_the_config_file(tmp_path: Path, flexjob: Callable[..., Result]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"platform: nowhere\nhome: {tmp_path / 'h'}\n")
    env = {"FLEXJOB_CONFIG": str(config)}
    assert "platform 'nowhere' is not one of" in flexjob("get", env=env).output
    assert flexjob("get", "--platform", "local", env=env).exit_code == 0


def test_xdg_config_home_holds_the_default_file(
    tmp_path: Path, flexjob: Callable[..., Result]
) -> None:
    (tmp_path / "flexjob").mkdir()
    (tmp_path / "flexjob" / "config.yaml").write_text(f"home: {tmp_path / 'xdg-home'}\n")
    assert flexjob("get", env={"XDG_CONFIG_HOME": str(tmp_path)}).exit_code == 0
    assert (tmp_path / "xdg-home" / "flexjob.sqlite").exists()


def test_an_unknown_key_is_named_with_the_allowed_ones(
    tmp_path: Path, flexjob: Callable[..., Result]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("platfrom: local\n")
    done = flexjob("get", env={"FLEXJOB_CONFIG": str(config)})
    assert done.exit_code == 2
    assert "unknown key 'platfrom' (did you mean 'platform'?); allowed: platform, home" in (
        done.output
    )


def test_bash_completion_completes_commands_and_options() -> None:
    script = Path(sys.executable).with_name("flexjob")
    env = {**os.environ, "_FLEXJOB_COMPLETE": "complete_bash", "COMP_CWORD": "1"}
    done = subprocess.run(
        [str(script)], env={**env, "COMP_WORDS": "flexjob pl"}, capture_output=True, text=True
    )
    assert done.stdout.split() == ["plot"]
    env["COMP_CWORD"] = "2"
    done = subprocess.run(
        [str(script)], env={**env, "COMP_WORDS": "flexjob run --nn"}, capture_output=True, text=True
    )
    assert done.stdout.split() == ["--nnodes"]
