"""``flexjob apply FILE``: store cluster-scoped objects — DI's ``AggregatorConfig`` — on the
local platform (SQLite ``cluster_objects``), where the server and the operator build the
aggregators of logic learners from them (``core.logic_learners``). On Kubernetes the same
object is a custom resource: ``kubectl apply`` it. Jobs go through ``flexjob submit``.
"""

from pathlib import Path
from typing import Any

import typer

from flexjob.api.load import parse_documents, read_source
from flexjob.api.problems import Problem, SpecError
from flexjob.api.readers.dijob import KIND_AGGREGATOR_CONFIG, aggregator_config
from flexjob.cli.errors import usage_error

#: The kinds ``flexjob apply`` stores.
CLUSTER_KINDS = (KIND_AGGREGATOR_CONFIG,)


def checked(docs: list[Any]) -> list[dict[str, Any]]:
    """The documents, each a valid cluster object; ``SpecError`` naming every bad one."""
    problems: list[Problem] = []
    for i, doc in enumerate(docs):
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if kind not in CLUSTER_KINDS:
            reason = (
                f"flexjob apply stores {', '.join(CLUSTER_KINDS)}; submit jobs with flexjob submit"
            )
            problems.append(Problem(f"documents[{i}].kind", kind, reason))
            continue
        try:
            aggregator_config(doc)
        except SpecError as exc:
            base = f"{KIND_AGGREGATOR_CONFIG}."
            problems += [
                Problem(f"documents[{i}].{p.path.removeprefix(base)}", p.value, p.message)
                for p in exc.problems
            ]
    if problems:
        raise SpecError(problems)
    return list(docs)


def apply(
    file: Path = typer.Argument(..., help="YAML/JSON file with one or more AggregatorConfigs."),
    platform_name: str | None = typer.Option(None, "--platform", help="local (default)."),
) -> None:
    """Create or replace cluster-scoped objects (DI's AggregatorConfig) on the local platform."""
    from flexjob.platform.api import ClusterObjectStore
    from flexjob.platform.registry import open_platform

    try:
        docs = checked(parse_documents(read_source(file)))
        platform = open_platform(platform_name)
    except SpecError as exc:
        for problem in exc.problems:
            typer.echo(f"{file}: {problem}", err=True)
        raise typer.Exit(1) from None
    except ValueError as exc:
        raise usage_error(f"--platform: {exc}") from None
    try:
        if not isinstance(platform, ClusterObjectStore):
            typer.echo(
                f"error: --platform {platform.name}: cluster objects are custom resources there; "
                "use kubectl apply",
                err=True,
            )
            raise typer.Exit(2)
        for doc in docs:
            created = platform.apply_cluster_object(doc)
            name = doc["metadata"]["name"]
            typer.echo(f"{doc['kind'].lower()}/{name} {'created' if created else 'configured'}")
    finally:
        platform.close()


def register(app: typer.Typer) -> None:
    app.command("apply")(apply)
