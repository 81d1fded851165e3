"""``flexjob submit | get | describe | logs | scale | delete``: managing jobs on a platform.

Arguments and printing only: loading specs is ``flexjob.api.load``, deciding is
``core.reconcile``, running the local operator is ``flexjob.operator.local.runner``.
"""

import time
from pathlib import Path

import typer
from rich.console import Console
from rich.live import Live
from rich.markup import escape

from flexjob.api import (
    ElasticJob,
    JobPhase,
    ObjectMeta,
    PodRef,
    ReplicaResourceSpec,
    ReplicaType,
    ScalePlan,
    ScalePlanSpec,
)
from flexjob.api.defaults import apply_defaults
from flexjob.api.load import dump_yaml, load_job
from flexjob.api.names import DEFAULT_NAMESPACE
from flexjob.api.problems import SpecError
from flexjob.api.validate import platform_problems
from flexjob.cli import job_views
from flexjob.cli.errors import valid_name
from flexjob.cli.timeline_cmds import job_timeline_dir
from flexjob.core.scale_bounds import bound_problem, finished_problem
from flexjob.observe import timeline
from flexjob.platform.api import AlreadyExistsError, NotFoundError, Platform, Replica
from flexjob.platform.registry import PLATFORMS, open_platform

_out = Console(soft_wrap=True, highlight=False)
_err = Console(stderr=True, soft_wrap=True, highlight=False)

NAMESPACE = typer.Option(
    DEFAULT_NAMESPACE, "--namespace", "-n", help="The job's namespace.", callback=valid_name
)
JOB = typer.Argument(..., help="The job.", callback=valid_name)
PLATFORM = typer.Option(
    None, "--platform", help=f"Where jobs live: {', '.join(PLATFORMS)} (default: local)."
)


def _fail(message: str, code: int = 1) -> typer.Exit:
    _err.print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(code)


def _platform(kind: str | None) -> Platform:
    try:
        return open_platform(kind)
    except ValueError as exc:
        raise _fail(f"--platform: {exc}", 2) from None


def _job(platform: Platform, namespace: str, name: str) -> ElasticJob:
    try:
        return platform.get_job(namespace, name)
    except NotFoundError:
        raise _fail(f"job {namespace}/{name} not found (see: flexjob get)") from None


def _load(file: Path) -> ElasticJob:
    try:
        return apply_defaults(load_job(file.read_text(encoding="utf-8")))
    except OSError as exc:
        raise _fail(f"{file}: cannot read: {exc.strerror or exc}") from None
    except SpecError as exc:
        for problem in exc.problems:
            _err.print(f"{escape(str(file))}: {escape(str(problem))}")
        raise typer.Exit(1) from None


def submit(
    file: Path = typer.Argument(..., help="The job spec (ElasticJob, DIJob, ElasticAIJob, ...)."),
    detach: bool = typer.Option(False, "--detach", "-d", help="Return once the job is stored."),
    namespace: str | None = typer.Option(
        None, "--namespace", "-n", help="Override the spec's.", callback=valid_name
    ),
    platform_name: str | None = PLATFORM,
) -> None:
    """Submit a job and follow it with a live table until it finishes (exit 0 if Succeeded).

    Locally the job's operator runs in this process, so Ctrl-C (or SIGTERM, SIGHUP) stops the
    job: its replicas get SIGTERM and a grace period, and it ends Failed. Use --detach to
    leave it running. On Kubernetes the operator runs in the cluster: Ctrl-C stops only the
    watch."""
    job = _load(file)
    if namespace:
        job.metadata.namespace = namespace
    platform = _platform(platform_name)
    problems = platform_problems(job, platform.name)
    for problem in problems:
        _err.print(f"{escape(str(file))}: {escape(str(problem))}")
    if problems:
        raise typer.Exit(1)
    ns, name = job.namespace, job.name
    try:
        platform.create_job(job)
    except AlreadyExistsError:
        raise _fail(
            f"job {ns}/{name} already exists; remove it with: flexjob delete {name}"
        ) from None
    from flexjob.operator.drivers import driver_for

    driver = driver_for(platform)
    if detach:
        _out.print(f"job {ns}/{name} submitted; {driver.detach(ns, name)}")
        return
    with Live(console=_out, refresh_per_second=4) as live:

        def show(job: ElasticJob, replicas: list[Replica]) -> None:
            live.update(job_views.replicas_table(job, replicas))

        try:
            final = driver.run(ns, name, observer=show)
        except KeyboardInterrupt:  # a driver that only watches (the operator runs elsewhere)
            _err.print(f"stopped watching; job {ns}/{name} keeps running")
            raise typer.Exit(130) from None
    phase = final.status.phase if final is not None and final.status else None
    if not _out.is_terminal:
        _out.line()
    _out.print(f"job {ns}/{name} {phase.value if phase else 'deleted'}")
    raise typer.Exit(0 if phase is JobPhase.SUCCEEDED else 1)


def _operator_notes(platform: Platform, jobs: list[ElasticJob]) -> dict[str, str]:
    """``operator not running`` for each unfinished local job whose operator lease is missing,
    expired or held by a dead process (other platforms run their operator as a service)."""
    from flexjob.operator.local.runner import lacks_operator
    from flexjob.platform.local import LocalPlatform

    if not isinstance(platform, LocalPlatform):
        return {}
    now = time.time()
    return {
        f"{j.namespace}/{j.name}": job_views.NO_OPERATOR
        for j in jobs
        if lacks_operator(platform, j, now)
    }


def get(
    name: str | None = typer.Argument(
        None, help="One job; all jobs when left out.", callback=valid_name
    ),
    namespace: str = NAMESPACE,
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A"),
    output: str = typer.Option("table", "--output", "-o", help="table, yaml or json."),
    platform_name: str | None = PLATFORM,
) -> None:
    """List jobs with their phase, or show one job and its replicas."""
    if output not in ("table", "yaml", "json"):
        raise _fail(f"--output: {output!r} is not one of table, yaml, json", 2)
    platform = _platform(platform_name)
    if name is None:
        jobs = platform.list_jobs(None if all_namespaces else namespace)
    else:
        jobs = [_job(platform, namespace, name)]
    if output == "json":
        import json

        wires = [j.to_wire() for j in jobs]
        typer.echo(json.dumps(wires[0] if name else wires, indent=2))
    elif output == "yaml":
        for j in jobs:
            typer.echo("---\n" + dump_yaml(j.to_wire()), nl=False)
    elif name is None:
        notes = _operator_notes(platform, jobs)
        _out.print(job_views.jobs_table(jobs, notes) if jobs else "no jobs")
    else:
        notes = _operator_notes(platform, jobs)
        _out.print(job_views.jobs_table(jobs, notes))
        replicas = platform.list_replicas(namespace, name)
        _out.print(job_views.replicas_table(jobs[0], replicas, notes.get(f"{namespace}/{name}")))


def describe(
    name: str = JOB,
    namespace: str = NAMESPACE,
    platform_name: str | None = PLATFORM,
) -> None:
    """Show a job's spec, status, replicas and events."""
    platform = _platform(platform_name)
    job = _job(platform, namespace, name)
    replicas = platform.list_replicas(namespace, name)
    note = _operator_notes(platform, [job]).get(f"{namespace}/{name}")
    _out.print(job_views.describe(job, replicas, platform.list_events(namespace, name), note))
    from flexjob.platform.local import LocalPlatform

    if isinstance(platform, LocalPlatform):
        lines = timeline.summary(timeline.read(job_timeline_dir(job, platform.home)))
        _out.print("\n".join(["Timeline:", *lines]) if lines else "Timeline: none yet")


def logs(
    name: str = JOB,
    replica: str | None = typer.Option(
        None,
        "--replica",
        "-r",
        help="e.g. worker-0 (default: master-0, else worker-0).",
        callback=valid_name,
    ),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing until it exits."),
    namespace: str = NAMESPACE,
    platform_name: str | None = PLATFORM,
) -> None:
    """Print a replica's output."""
    platform = _platform(platform_name)
    if replica is None:
        try:
            job = platform.get_job(namespace, name)
            has_master = ReplicaType.MASTER in job.spec.replica_specs
        except NotFoundError:
            has_master = False
        replica = "master-0" if has_master else "worker-0"
    full = replica if replica.startswith(f"{name}-") else f"{name}-{replica}"
    try:
        for line in platform.read_logs(namespace, full, follow=follow):
            typer.echo(line, nl=False)
    except NotFoundError as exc:
        raise _fail(str(exc)) from None


def _parse_counts(
    worker: int | None, ps: int | None, replicas: list[str]
) -> dict[ReplicaType, int]:
    counts: dict[ReplicaType, int] = {}
    if worker is not None:
        counts[ReplicaType.WORKER] = worker
    if ps is not None:
        counts[ReplicaType.PS] = ps
    allowed = ", ".join(t.value for t in ReplicaType)
    for item in replicas:
        kind, _, number = item.partition("=")
        try:
            counts[ReplicaType(kind)] = int(number)
        except ValueError:
            raise _fail(
                f"--replicas: {item!r} is not TYPE=N with TYPE one of {allowed}", 2
            ) from None
    for rtype, n in counts.items():
        if n < 0:
            raise _fail(f"--{rtype.value}: {n} is negative", 2)
    return counts


def scale(
    name: str = JOB,
    worker: int | None = typer.Option(None, "--worker", help="Wanted number of workers."),
    ps: int | None = typer.Option(None, "--ps", help="Wanted number of parameter servers."),
    replicas: list[str] = typer.Option([], "--replicas", help="TYPE=N, repeatable."),
    remove: list[str] = typer.Option([], "--remove", help="A replica to remove, e.g. worker-1."),
    namespace: str = NAMESPACE,
    platform_name: str | None = PLATFORM,
) -> None:
    """Write a ScalePlan for a running job; its operator carries it out.

    Refused (exit 1) for a finished job and for a count outside the type's
    minReplicas/maxReplicas."""
    counts = _parse_counts(worker, ps, replicas)
    if not counts and not remove:
        raise _fail("nothing to do: give --worker N, --ps N, --replicas TYPE=N or --remove", 2)
    platform = _platform(platform_name)
    job = _job(platform, namespace, name)
    problems = [finished_problem(job)]
    problems += [bound_problem(job, rtype, n) for rtype, n in counts.items()]
    found = [p for p in problems if p is not None]
    if found:
        raise _fail("; ".join(found))
    plan = ScalePlan(
        metadata=ObjectMeta(
            name=f"{name}-scale-{time.time_ns() // 1_000_000}", namespace=namespace
        ),
        spec=ScalePlanSpec(
            owner_job=name,
            replica_resource_specs={t: ReplicaResourceSpec(replicas=n) for t, n in counts.items()},
            remove_pods=[PodRef(name=r) for r in remove],
            manual_scaling=True,
        ),
    )
    platform.create_scale_plan(plan)
    _out.print(f"ScalePlan {namespace}/{plan.metadata.name} created for job {name}")


def delete(
    name: str = JOB,
    namespace: str = NAMESPACE,
    platform_name: str | None = PLATFORM,
) -> None:
    """Delete a job: its replicas are stopped and (locally) its logs and state removed, so a
    job submitted again under the same name starts clean."""
    platform = _platform(platform_name)
    _job(platform, namespace, name)
    platform.delete_job(namespace, name)
    _out.print(f"job {namespace}/{name} deleted")


def register(app: typer.Typer) -> None:
    app.command("submit")(submit)
    app.command("get")(get)
    app.command("describe")(describe)
    app.command("logs")(logs)
    app.command("scale")(scale)
    app.command("delete")(delete)
