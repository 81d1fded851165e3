"""``flexjob validate`` and ``flexjob convert``: check job specs of every supported format and
print them as flexjob ``ElasticJob`` YAML.

The work is ``flexjob.api.load``; this module only reads arguments and prints.
"""

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from flexjob.api.defaults import apply_defaults
from flexjob.api.load import check_documents, dump_yaml, load_job, parse_documents
from flexjob.api.problems import Problem, SpecError

_out = Console(soft_wrap=True, highlight=False)
_err = Console(stderr=True, soft_wrap=True, highlight=False)


def _file_problems(path: Path) -> list[Problem]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return [Problem("", str(path), f"cannot read: {exc.strerror or exc}")]
    try:
        return check_documents(parse_documents(text))
    except SpecError as exc:
        return exc.problems


def validate(
    files: list[Path] = typer.Argument(..., help="Job specs (YAML or JSON), any format."),
) -> None:
    """Check job specs; print one line per problem. Exit 0 when every file is valid."""
    failed = False
    for path in files:
        problems = _file_problems(path)
        failed = failed or bool(problems)
        for problem in problems:
            _out.print(f"[red]{escape(str(path))}[/red]: {escape(str(problem))}")
        if not problems:
            _out.print(f"{escape(str(path))}: [green]valid[/green]")
    raise typer.Exit(1 if failed else 0)


def convert(
    file: Path = typer.Argument(..., help="A job spec in any supported format."),
    defaults: bool = typer.Option(False, "--defaults", help="Fill in every default."),
    output: str = typer.Option("yaml", "--output", "-o", help="yaml or json."),
) -> None:
    """Print FILE as a flexjob ElasticJob (DIJob, ElasticAIJob, DLRover and Kubeflow jobs)."""
    if output not in ("yaml", "json"):
        _err.print(f"--output: {output!r} is not one of yaml, json")
        raise typer.Exit(2)
    try:
        job = load_job(file.read_text(encoding="utf-8"))
    except OSError as exc:
        _err.print(f"{escape(str(file))}: cannot read: {escape(exc.strerror or str(exc))}")
        raise typer.Exit(1) from None
    except SpecError as exc:
        for problem in exc.problems:
            _err.print(f"{escape(str(file))}: {escape(str(problem))}")
        raise typer.Exit(1) from None
    wire = (apply_defaults(job) if defaults else job).to_wire()
    text = json.dumps(wire, indent=2) + "\n" if output == "json" else dump_yaml(wire)
    typer.echo(text, nl=False)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
    app.command("convert")(convert)
