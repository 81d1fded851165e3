"""``flexjob monitor``: report cluster capacity and usage to the brain periodically."""

import typer


def register(app: typer.Typer) -> None:
    app.command("monitor")(monitor)


def monitor(
    brain: str = typer.Option("http://127.0.0.1:50100", help="Base URL of the brain."),
    platform: str = typer.Option("local", help="What to monitor: local or kubernetes."),
    interval: float = typer.Option(10.0, min=0.1, help="Seconds between reports."),
    count: int = typer.Option(0, min=0, help="Stop after this many reports (0: run forever)."),
    context: str = typer.Option("", help="kubeconfig context (kubernetes platform)."),
    no_jobs: bool = typer.Option(
        False, "--no-jobs", help="Report nodes only, not the platform's jobs and their status."
    ),
) -> None:
    """Report node capacity and usage (this machine, or every Kubernetes node) and the status of
    the platform's jobs to the brain."""
    import logging
    import signal
    import threading

    from flexjob.brain.monitor import (
        JobSource,
        KubernetesSource,
        LocalSource,
        NodeSampler,
        run_monitor,
    )
    from flexjob.rpc.brain_client import BrainClient

    logging.basicConfig(level="INFO", format="%(levelname)s %(name)s %(message)s")
    source: NodeSampler
    if platform == "local":
        source = LocalSource()
    elif platform == "kubernetes":
        source = KubernetesSource.from_config(context or None)
    else:
        typer.echo(f"error: --platform: {platform!r} is not one of: local, kubernetes", err=True)
        raise typer.Exit(2)
    jobs = None
    if not no_jobs:
        from flexjob.platform.registry import open_platform

        jobs = JobSource(open_platform(platform), platform)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with BrainClient(brain) as client:
        sent = run_monitor(source, client, interval, stop, count or None, jobs)
    typer.echo(f"flexjob monitor: {sent} reports sent to {brain}")
