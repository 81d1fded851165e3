import importlib
import subprocess
import sys

import pytest
import typer

from flexjob import __version__
from flexjob.cli.main import COMMAND_MODULES, PROCESS_COMMANDS, command_modules


def test_version_flag_prints_the_package_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flexjob", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"flexjob {__version__}"


@pytest.mark.parametrize("command", sorted(PROCESS_COMMANDS))
def test_a_process_command_loads_only_its_module_and_still_answers(command: str) -> None:
    app = typer.Typer()
    importlib.import_module(f"flexjob.cli.{PROCESS_COMMANDS[command]}").register(app)
    assert command in {c.name for c in app.registered_commands}
    probe = (
        "import sys; sys.argv = ['flexjob', sys.argv[1], '--help']\n"
        "import flexjob.cli.main as m\n"
        "print(sorted(str(c.name) for c in m.app.registered_commands))\n"
        "print('pydantic' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, command], capture_output=True, text=True, check=True
    )
    names, pydantic_loaded = out.stdout.splitlines()
    assert command in names and "submit" not in names
    assert pydantic_loaded == "False"  # the job models are not loaded for a job's processes
    help_out = subprocess.run(
        [sys.executable, "-m", "flexjob", command, "--help"], capture_output=True, text=True
    )
    assert help_out.returncode == 0 and "Usage" in help_out.stdout


def test_other_command_lines_load_every_command() -> None:
    assert command_modules(["flexjob", "--help"]) == COMMAND_MODULES
    assert command_modules(["flexjob"]) == COMMAND_MODULES
    assert command_modules(["flexjob", "submit", "job.yaml"]) == COMMAND_MODULES
