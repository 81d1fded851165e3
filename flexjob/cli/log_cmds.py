"""``flexjob logs JOB``: a job's output as ``kubectl logs`` shows a pod's.

Every replica of the job by default, each line prefixed ``[worker-1] `` (the replica that ran
rank 0 is then always among them); ``--replica worker-1`` (or ``-l replica-type=worker``) picks;
``--tail``, ``--since``, ``-p/--previous`` and ``-f/--follow`` as kubectl's. Picking and reading
is ``client.logs``; this module has the flags and the printing.
"""

import re

import typer

from flexjob.api.errors import FlexjobError
from flexjob.cli.errors import KUBECTL_USAGE_EXIT, KubectlCommand, usage_error, valid_name
from flexjob.cli.job_cmds import NAMESPACE, PLATFORM, cli_platform, fail
from flexjob.client.logs import LogQuery, job_logs

_UNITS = {"s": 1, "m": 60, "h": 3600}


def parse_duration(text: str) -> float:
    """kubectl's durations: ``30s``, ``5m``, ``1h30m``; seconds."""
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", text.strip())
    if not text.strip() or parts is None:
        raise ValueError(f"--since: {text!r} is not a duration such as 30s, 5m or 1h")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in parts.groups())
    return hours * 3600 + minutes * 60 + seconds


def logs(
    name: str = typer.Argument(..., help="The job."),
    replica: str | None = typer.Option(
        None,
        "--replica",
        help="One replica, e.g. worker-1 [every replica, lines prefixed].",
        callback=valid_name,
    ),
    selector: str = typer.Option(
        "", "--selector", "-l", help="Replicas by label, e.g. replica-type=worker."
    ),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing until they end."),
    tail: int = typer.Option(-1, "--tail", help="Only the last N lines of each [-1: all]."),
    since: str | None = typer.Option(
        None, "--since", help="Only lines of the last 30s, 5m, 1h (Kubernetes)."
    ),
    previous: bool = typer.Option(
        False, "--previous", "-p", help="The replica's previous incarnation (Kubernetes)."
    ),
    namespace: str = NAMESPACE,
    platform_name: str | None = PLATFORM,
) -> None:
    """Print a job's output: every replica's, each line prefixed with the replica's name, or
    one replica's."""
    try:
        since_s = parse_duration(since) if since is not None else None
    except ValueError as exc:
        raise usage_error(exc, KUBECTL_USAGE_EXIT) from None
    if tail < -1:
        raise usage_error(f"--tail must be -1 (all) or >= 0, got {tail}", KUBECTL_USAGE_EXIT)
    query = LogQuery(
        replica=replica,
        selector=selector,
        follow=follow,
        tail=None if tail < 0 else tail,
        since_seconds=since_s,
        previous=previous,
    )
    platform = cli_platform(platform_name)
    try:
        for line in job_logs(platform, namespace, name, query):
            typer.echo(line, nl=False)
    except FlexjobError as exc:
        raise fail(str(exc)) from None


def register(app: typer.Typer) -> None:
    app.command("logs", cls=KubectlCommand)(logs)
