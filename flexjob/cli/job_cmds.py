"""``flexjob submit | get | describe | logs | scale | delete``: managing jobs on a platform.

Arguments and printing only: loading specs is ``flexjob.api.load``, deciding is
``core.operator.reconcile``, running the local operator is ``flexjob.operator.local.runner``.
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
from flexjob.api.errors import FlexjobError
from flexjob.api.load import load_job
from flexjob.api.names import DEFAULT_NAMESPACE
from flexjob.api.problems import SpecError
from flexjob.api.roles import DEFAULT_TYPE, PS_TYPE, scaling_target
from flexjob.api.validate import platform_problems
from flexjob.cli import get_output, job_views
from flexjob.cli.errors import KUBECTL_USAGE_EXIT, KubectlCommand, valid_name, valid_names
from flexjob.cli.timeline_cmds import job_timeline_dir
from flexjob.core.operator.scale_bounds import bound_problem, finished_problem
from flexjob.observe import timeline
from flexjob.platform.contract import AlreadyExistsError, NotFoundError, Platform, Replica
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


def fail(message: str, code: int = 1) -> typer.Exit:
    _err.print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(code)


def cli_platform(kind: str | None) -> Platform:
    try:
        return open_platform(kind)
    except ValueError as exc:
        raise fail(f"--platform: {exc}", KUBECTL_USAGE_EXIT) from None
    except FlexjobError as exc:  # no kubeconfig, an unreachable cluster
        raise fail(str(exc)) from None


def _job(platform: Platform, namespace: str, name: str) -> ElasticJob:
    try:
        return platform.get_job(namespace, name)
    except NotFoundError:
        raise fail(f"job {namespace}/{name} not found (see: flexjob get)") from None


def _load(file: Path) -> ElasticJob:
    try:
        return apply_defaults(load_job(file.read_text(encoding="utf-8")))
    except OSError as exc:
        raise fail(f"{file}: cannot read: {exc.strerror or exc}") from None
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
    platform = cli_platform(platform_name)
    problems = platform_problems(job, platform.name)
    for problem in problems:
        _err.print(f"{escape(str(file))}: {escape(str(problem))}")
    if problems:
        raise typer.Exit(1)
    ns, name = job.namespace, job.name
    try:
        platform.create_job(job)
    except AlreadyExistsError:
        raise fail(
            f"job {ns}/{name} already exists; remove it with: flexjob delete {name}"
        ) from None
    from flexjob.operator.drivers import driver_for

    driver = driver_for(platform)
    if detach:
        ns_flag = "" if ns == DEFAULT_NAMESPACE else f" -n {ns}"
        _out.print(f"job {ns}/{name} submitted; {driver.detach(ns, name)}")
        _out.print(
            f"follow it: flexjob get {name}{ns_flag} -w; its output: flexjob logs {name}"
            f"{ns_flag} -f; stop it: flexjob delete {name}{ns_flag}"
        )
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
    output: str = typer.Option(
        "table", "--output", "-o", help="table, wide, name, yaml, json or jsonpath=TEMPLATE."
    ),
    watch: bool = typer.Option(
        False, "--watch", "-w", help="After the list, print each job again when it changes."
    ),
    platform_name: str | None = PLATFORM,
) -> None:
    """List jobs with their phase, or show one job and its replicas (as kubectl get)."""
    try:
        out = get_output.parse_output(output)
    except ValueError as exc:
        raise fail(str(exc), KUBECTL_USAGE_EXIT) from None
    platform = cli_platform(platform_name)
    jobs = _get_jobs(platform, name, None if all_namespaces else namespace)
    if out.kind in ("table", "wide"):
        notes = _operator_notes(platform, jobs)
        wide = out.kind == "wide"
        _out.print(job_views.jobs_table(jobs, notes, wide=wide) if jobs else "no jobs")
        if name is not None and not watch:
            replicas = platform.list_replicas(namespace, name)
            note = notes.get(f"{namespace}/{name}")
            _out.print(job_views.replicas_table(jobs[0], replicas, note, wide=wide))
    else:
        typer.echo(get_output.render(out, [j.to_wire() for j in jobs], name is not None), nl=False)
    if watch:
        _watch(platform, name, None if all_namespaces else namespace, out, jobs)


def _get_jobs(platform: Platform, name: str | None, namespace: str | None) -> list[ElasticJob]:
    if name is None:
        return platform.list_jobs(namespace)
    return [_job(platform, namespace or DEFAULT_NAMESPACE, name)]


def _row(job: ElasticJob) -> object:
    status = job.status
    return None if status is None else (status.phase, status.restart_count, status.replica_statuses)


def _watch(
    platform: Platform,
    name: str | None,
    namespace: str | None,
    out: get_output.Output,
    jobs: list[ElasticJob],
    interval_s: float = 1.0,
) -> None:
    """``get -w``: each job again (a table row without header, or its object) whenever its
    phase, restarts or replica counts change, until Ctrl-C (exit 0) or the job is gone."""
    seen = {(j.namespace, j.name): _row(j) for j in jobs}
    try:
        while True:
            time.sleep(interval_s)
            try:
                current = _get_jobs(platform, name, namespace)
            except typer.Exit:
                return  # the one job watched was deleted
            changed = [j for j in current if seen.get((j.namespace, j.name)) != _row(j)]
            for j in changed:
                seen[(j.namespace, j.name)] = _row(j)
            if not changed:
                continue
            if out.kind in ("table", "wide"):
                table = job_views.jobs_table(changed, wide=out.kind == "wide", header=False)
                _out.print(table)
            else:
                wires = [j.to_wire() for j in changed]
                typer.echo(get_output.render(out, wires, len(wires) == 1), nl=False)
    except KeyboardInterrupt:
        return


def describe(
    name: str = JOB,
    namespace: str = NAMESPACE,
    platform_name: str | None = PLATFORM,
) -> None:
    """Show a job's spec, status, replicas and events."""
    platform = cli_platform(platform_name)
    job = _job(platform, namespace, name)
    replicas = platform.list_replicas(namespace, name)
    note = _operator_notes(platform, [job]).get(f"{namespace}/{name}")
    _out.print(job_views.describe(job, replicas, platform.list_events(namespace, name), note))
    from flexjob.platform.local import LocalPlatform

    if isinstance(platform, LocalPlatform):
        lines = timeline.summary(timeline.read(job_timeline_dir(job, platform.home)))
        _out.print("\n".join(["Timeline:", *lines]) if lines else "Timeline: none yet")


def _parse_counts(
    worker: int | None, ps: int | None, replicas: list[str], target: ReplicaType | None = None
) -> dict[ReplicaType, int]:
    """The counts the flags ask for; a bare ``--replicas N`` is for ``target``, the type the
    job scales (as ``kubectl scale --replicas N``)."""
    counts: dict[ReplicaType, int] = {}
    if worker is not None:
        counts[DEFAULT_TYPE] = worker
    if ps is not None:
        counts[PS_TYPE] = ps
    allowed = ", ".join(t.value for t in ReplicaType)
    for item in replicas:
        if item.isdigit():
            if target is None:
                raise fail("--replicas N: the job has no type that scales", KUBECTL_USAGE_EXIT)
            counts[target] = int(item)
            continue
        kind, _, number = item.partition("=")
        try:
            counts[ReplicaType(kind)] = int(number)
        except ValueError:
            raise fail(
                f"--replicas: {item!r} is not N or TYPE=N with TYPE one of {allowed}",
                KUBECTL_USAGE_EXIT,
            ) from None
    for rtype, n in counts.items():
        if n < 0:
            raise fail(f"--{rtype.value}: {n} is negative", KUBECTL_USAGE_EXIT)
    return counts


def scale(
    name: str = JOB,
    worker: int | None = typer.Option(None, "--worker", help="Wanted number of workers."),
    ps: int | None = typer.Option(None, "--ps", help="Wanted number of parameter servers."),
    replicas: list[str] = typer.Option(
        [], "--replicas", help="N (the type the job scales, as kubectl scale) or TYPE=N."
    ),
    remove: list[str] = typer.Option([], "--remove", help="A replica to remove, e.g. worker-1."),
    namespace: str = NAMESPACE,
    platform_name: str | None = PLATFORM,
) -> None:
    """Write a ScalePlan for a running job; its operator carries it out.

    Refused (exit 1) for a finished job and for a count outside the type's
    minReplicas/maxReplicas."""
    if worker is None and ps is None and not replicas and not remove:
        raise fail(
            "nothing to do: give --replicas N, --worker N, --ps N, --replicas TYPE=N or --remove",
            KUBECTL_USAGE_EXIT,
        )
    platform = cli_platform(platform_name)
    job = _job(platform, namespace, name)
    counts = _parse_counts(worker, ps, replicas, scaling_target(job.spec.replica_specs))
    problems = [finished_problem(job)]
    problems += [bound_problem(job, rtype, n) for rtype, n in counts.items()]
    found = [p for p in problems if p is not None]
    if found:
        raise fail("; ".join(found))
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
    names: list[str] = typer.Argument(..., help="One or more jobs.", callback=valid_names),
    namespace: str = NAMESPACE,
    platform_name: str | None = PLATFORM,
) -> None:
    """Delete jobs: their replicas are stopped and (locally) their logs and state removed, so a
    job submitted again under the same name starts clean. A job that is not there is named and
    the others are still deleted (exit 1)."""
    platform = cli_platform(platform_name)
    missing = False
    for name in names:
        try:
            platform.get_job(namespace, name)
        except NotFoundError:
            _err.print(f"[red]error:[/red] job {escape(namespace)}/{escape(name)} not found")
            missing = True
            continue
        platform.delete_job(namespace, name)
        _out.print(f"job {namespace}/{name} deleted")
    if missing:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("submit", cls=KubectlCommand)(submit)
    app.command("get", cls=KubectlCommand)(get)
    app.command("describe", cls=KubectlCommand)(describe)
    app.command("scale", cls=KubectlCommand)(scale)
    app.command("delete", cls=KubectlCommand)(delete)
