"""``--help`` shows every option's help as written: brackets (``[a temporary dir, removed]``,
``[worker-0/rank1]``) are text, not markup, and a flag shows no value type."""

import re

import typer.main
from typer import _click as click  # the click typer vendors
from typer.testing import CliRunner

from flexjob.cli.main import app

ROOT = typer.main.get_command(app)


def _commands(group: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in getattr(group, "commands", {}).items():
        found += _commands(sub, (*path, name))
    return found


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _bare(text: str) -> str:
    """Without whitespace: help is wrapped at spaces and hyphens."""
    return re.sub(r"\s+", "", text)


def _help(path: tuple[str, ...]) -> str:
    done = CliRunner().invoke(app, [*path, "--help"], terminal_width=100)
    assert done.exit_code == 0, done.output
    return _flat(done.output)


def _command(path: tuple[str, ...]) -> click.Command:
    command = ROOT
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return command


def test_every_bracketed_option_help_is_shown_whole() -> None:
    missing = []
    for path in _commands(ROOT):
        command = _command(path)
        shown = _help(path)
        for param in command.params:
            text = getattr(param, "help", None)
            if text and "[" in text and _bare(text) not in _bare(shown):
                missing.append(f"{' '.join(path)} {param.name}: {text}")
    assert missing == []


def test_run_help_keeps_its_bracketed_defaults_and_examples() -> None:
    shown = _help(("run",))
    assert "kept [a temporary dir, removed after success]" in shown
    assert "([worker-0/rank1]: ...)" in shown
    assert "Agents to start here [MIN of --nnodes]" in shown


def test_agent_help_keeps_the_node_id_default() -> None:
    assert "Stable node id [the replica's name, else HOST-PID]" in _help(("agent",))


def test_a_flag_shows_no_value_type() -> None:
    shown = _help(("run",))
    assert "--standalone One node" in shown
    assert "<bool>" not in shown
