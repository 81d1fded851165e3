"""``flexjob master``: run one job's training master (rendezvous, shards, stats) until stopped.

Imports the master (and grpc / torch) only when the command runs, so ``flexjob --help`` stays
fast. Not for submitting jobs.
"""

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    app.command("master")(master)


def master(
    job: Path | None = typer.Option(
        None, "--job", help="Job YAML (ElasticJob, or any format `flexjob` reads)."
    ),
    config: Path | None = typer.Option(
        None, "--config", help="MasterConfig JSON (what spawn_master writes)."
    ),
    port: int | None = typer.Option(None, "--port", help="RPC port; 0 picks a free one."),
    host: str | None = typer.Option(None, "--host", help="Address to bind [127.0.0.1]."),
    job_dir: Path | None = typer.Option(
        None, "--job-dir", help="Where state and master.addr are written."
    ),
    heartbeat_timeout: float | None = typer.Option(
        None, "--heartbeat-timeout", help="Seconds of silence before a node is dead [30]."
    ),
    last_call_timeout: float | None = typer.Option(
        None, "--last-call-timeout", help="Seconds a round waits for more than min nodes [1]."
    ),
    straggler_timeout: float | None = typer.Option(
        None, "--straggler-timeout", help="Seconds before a shard in progress is handed out again."
    ),
    advertise_host: str | None = typer.Option(
        None, "--advertise-host", help="Host name clients use to reach this master."
    ),
    no_store: bool = typer.Option(
        False, "--no-store", help="Do not host the torch TCPStore (rank 0's agent does)."
    ),
) -> None:
    """Run the training master of one job."""
    import logging

    from flexjob.api.defaults import apply_defaults
    from flexjob.api.load import load_job
    from flexjob.master.config import MasterConfig
    from flexjob.master.main import run_master

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if (job is None) == (config is None):
        raise typer.BadParameter("give exactly one of --job FILE or --config FILE")
    try:
        if job is not None:
            base = MasterConfig.from_job(apply_defaults(load_job(job)))
        else:
            assert config is not None
            base = MasterConfig.from_json(config.read_text())
        cfg = base.with_overrides(
            port=port,
            host=host,
            job_dir=str(job_dir) if job_dir else None,
            heartbeat_timeout=heartbeat_timeout,
            last_call_timeout=last_call_timeout,
            straggler_timeout=straggler_timeout,
            host_store=False if no_store else None,
            advertise_host=advertise_host,
        )
    except (ValueError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(run_master(cfg))
