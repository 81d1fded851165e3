"""``flexjob apply -f FILE``, as kubectl apply: jobs (any supported kind) are created and run,
or, when they exist, scaled to the file's replica counts (``FlexjobClient.update_job``);
cluster-scoped objects — DI's ``AggregatorConfig`` — are stored on the local platform (SQLite
``cluster_objects``), where the server and the operator build the aggregators of logic
learners from them (``core.operator.logic_learners``). On Kubernetes such an object is a custom
resource: ``kubectl apply`` it.
"""

from pathlib import Path
from typing import Any

import typer

from flexjob.api import ElasticJob
from flexjob.api.defaults import apply_defaults
from flexjob.api.errors import AlreadyExistsError, FlexjobError
from flexjob.api.load import job_from_dict, parse_documents, read_source
from flexjob.api.names import API_VERSION, KIND_JOB
from flexjob.api.problems import Problem, SpecError
from flexjob.api.readers import find_reader
from flexjob.api.readers.dijob import KIND_AGGREGATOR_CONFIG, aggregator_config
from flexjob.cli.errors import KUBECTL_USAGE_EXIT, KubectlCommand, usage_error
from flexjob.cli.get_output import object_name
from flexjob.client.client import spec_changes

#: The kinds ``flexjob apply`` stores.
CLUSTER_KINDS = (KIND_AGGREGATOR_CONFIG,)


def checked(docs: list[Any]) -> list[dict[str, Any]]:
    """The documents that are not jobs, each a valid cluster object; ``SpecError`` naming
    every bad one."""
    problems: list[Problem] = []
    for i, doc in enumerate(docs):
        if _is_job(doc):
            continue
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if kind not in CLUSTER_KINDS:
            reason = f"flexjob apply takes jobs and {', '.join(CLUSTER_KINDS)}"
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
    return [d for d in docs if not _is_job(d)]


def apply(
    file: Path | None = typer.Argument(None, help="The file (or give it with -f)."),
    filename: Path | None = typer.Option(
        None, "--filename", "-f", help="YAML/JSON file: jobs of any kind, AggregatorConfigs."
    ),
    platform_name: str | None = typer.Option(None, "--platform", help="local (default)."),
) -> None:
    """Create or update what a file holds, as kubectl apply: a job is created (and run) or,
    when it exists, its replica counts are scaled to the file's; cluster-scoped objects (DI's
    AggregatorConfig) are created or replaced on the local platform."""
    source = filename or file
    if source is None or (filename is not None and file is not None):
        raise usage_error("give one file: flexjob apply -f FILE", KUBECTL_USAGE_EXIT)
    try:
        docs = parse_documents(read_source(source))
        jobs = [d for d in docs if _is_job(d)]
        objects = checked(docs)
        models = [job_from_dict(d) for d in jobs]
    except SpecError as exc:
        for problem in exc.problems:
            typer.echo(f"{source}: {problem}", err=True)
        raise typer.Exit(1) from None
    from flexjob.client import FlexjobClient

    try:
        client = FlexjobClient(platform_name)
    except (ValueError, FlexjobError) as exc:
        raise usage_error(f"--platform: {exc}", KUBECTL_USAGE_EXIT) from None
    with client:
        for model in models:
            typer.echo(f"{object_name(model.to_wire())} {_apply_job(client, model)}")
        if objects:
            _apply_objects(client.platform, objects)


def _is_job(doc: Any) -> bool:
    if not isinstance(doc, dict) or doc.get("kind") in CLUSTER_KINDS:
        return False
    native = doc.get("apiVersion") == API_VERSION and doc.get("kind") == KIND_JOB
    return native or find_reader(doc.get("apiVersion"), doc.get("kind")) is not None


def _apply_job(client: Any, model: ElasticJob) -> str:
    """``created``, ``configured`` (its counts scaled) or ``unchanged``; an error naming the
    fields that cannot change while the job exists."""
    try:
        client.create_job(model)
        return "created"
    except AlreadyExistsError:
        pass
    stored = client.get_job(model.name, namespace=model.metadata.namespace or None)
    counts, _ = spec_changes(stored, apply_defaults(model.model_copy(deep=True)))
    try:
        client.update_job(model)
    except FlexjobError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    return "configured" if counts else "unchanged"


def _apply_objects(platform: Any, docs: list[dict[str, Any]]) -> None:
    from flexjob.platform.contract import ClusterObjectStore

    if not isinstance(platform, ClusterObjectStore):
        typer.echo(
            f"error: --platform {platform.name}: cluster objects are custom resources there; "
            "use kubectl apply",
            err=True,
        )
        raise typer.Exit(KUBECTL_USAGE_EXIT)
    for doc in docs:
        created = platform.apply_cluster_object(doc)
        name = doc["metadata"]["name"]
        typer.echo(f"{doc['kind'].lower()}/{name} {'created' if created else 'configured'}")


def register(app: typer.Typer) -> None:
    app.command("apply", cls=KubectlCommand)(apply)
