"""``flexjob plot``: draw a job's timeline; and where a job's timeline lives (for ``describe``).

A job is named by its job directory (``flexjob run --job-dir``, or the directory a run printed)
or by its name on the local platform, whose implicit master keeps the timeline in its state
folder. On Kubernetes the timeline stays in the master pod. Drawing is ``observe.plot``.
"""

from pathlib import Path

import typer

from flexjob.api import ElasticJob
from flexjob.api.names import DEFAULT_NAMESPACE
from flexjob.cli.errors import valid_name
from flexjob.core.operator.job_master import master_job_dir
from flexjob.observe import timeline


def job_timeline_dir(job: ElasticJob, home: Path) -> Path:
    """The folder of a local job's implicit master (``operator.local.loop``'s state root)."""
    from flexjob.platform.local.paths import jobs_root

    return Path(master_job_dir(str(jobs_root(home)), job))


def _resolve(job: str, namespace: str) -> tuple[Path, str]:
    path = Path(job)
    if path.is_dir():
        return path, path.name
    from flexjob.platform.contract import NotFoundError
    from flexjob.platform.local import LocalPlatform

    platform = LocalPlatform()
    try:
        found = platform.get_job(namespace, job)
    except NotFoundError:
        raise typer.BadParameter(
            f"{job!r} is neither a job directory nor a job on the local platform "
            "(flexjob get lists them)",
            param_hint="JOB",
        ) from None
    return job_timeline_dir(found, platform.home), found.name


def plot(
    job: str = typer.Argument(..., help="A job directory, or a job's name (local platform)."),
    output: Path = typer.Option(None, "--output", "-o", help="PNG to write [JOB.png]."),
    namespace: str = typer.Option(DEFAULT_NAMESPACE, "--namespace", "-n", callback=valid_name),
) -> None:
    """Draw throughput and world size over time with node losses, joins and scales marked."""
    from flexjob.observe.plot import save_plot

    directory, name = _resolve(job, namespace)
    tl = timeline.read(directory)
    if not tl.samples and not tl.events:
        typer.echo(f"error: no timeline in {directory} (the job's master writes it)", err=True)
        raise typer.Exit(1)
    path = save_plot(tl, output or Path(f"{name}.png"), name)
    typer.echo(f"wrote {path}")


def register(app: typer.Typer) -> None:
    app.command("plot")(plot)
