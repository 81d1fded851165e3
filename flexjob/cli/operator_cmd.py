"""``flexjob operator`` (the kopf operator, or ``--platform local`` the operator of local jobs)
and ``flexjob manifests install`` (what to apply).

Only argument handling and printing here: the operators are
``flexjob.operator.kubernetes.runner`` and ``flexjob.operator.local.runner``, the manifests
``flexjob.operator.manifests``. kopf and the Kubernetes client are imported inside the commands
so that ``flexjob --help`` stays fast.
"""

import asyncio
import dataclasses
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from flexjob.api.names import ENV_IMAGE
from flexjob.cli.errors import valid_names
from flexjob.core.operator.master_state import DEFAULT_SIZE as DEFAULT_STATE_SIZE

if TYPE_CHECKING:
    from flexjob.core.operator.master_state import MasterStateStorage


def operator(
    jobs: list[str] = typer.Argument(
        None,
        help="--platform local: the jobs to run the operator of (default: every unfinished "
        "job that has no running operator).",
        show_default=False,
        callback=valid_names,
    ),
    platform_name: str = typer.Option(
        "kubernetes", "--platform", help="kubernetes (kopf, every job) or local (one machine)."
    ),
    detach: bool = typer.Option(
        False, "--detach", "-d", help="--platform local: run in the background."
    ),
    namespace: list[str] = typer.Option(
        [],
        "--namespace",
        "-n",
        help="Serve only these namespaces (repeatable).",
        callback=valid_names,
    ),
    all_namespaces: bool = typer.Option(
        False, "--all-namespaces", "-A", help="Serve every namespace (the default without -n)."
    ),
    kubeconfig: Path | None = typer.Option(
        None, help="Kubeconfig file (default: in-cluster, else ~/.kube/config)."
    ),
    context: str | None = typer.Option(None, help="Kubeconfig context."),
    server: str | None = typer.Option(
        None,
        help="API server URL without credentials (e.g. `kubectl proxy` at http://127.0.0.1:8001).",
    ),
    workers: int = typer.Option(4, min=1, help="Jobs reconciled at the same time."),
    parallel: int = typer.Option(
        16,
        min=1,
        help="Pod creations one job's dispatch (or deletions one pass) sends at once (at most).",
    ),
    pod_batch: float | None = typer.Option(
        None,
        min=0,
        help="Seconds a job waits for more pod events before it is reconciled (not for a pod "
        "that failed or is gone; 0: never waits) [default: runner.POD_EVENT_BATCH, 0.1].",
        show_default=False,
    ),
    resync: float = typer.Option(
        60.0, min=0, help="Re-check every job this often (seconds; 0: never)."
    ),
    webhooks: bool = typer.Option(
        True, help="Serve the validating and mutating admission webhooks."
    ),
    webhook_addr: str = typer.Option("0.0.0.0", help="Address the webhook server listens on."),
    webhook_port: int = typer.Option(9443, help="Port of the webhook server."),
    webhook_cert: Path | None = typer.Option(
        None, help="TLS certificate (PEM); without it: plain HTTP."
    ),
    webhook_key: Path | None = typer.Option(None, help="TLS private key (PEM)."),
    liveness: str | None = typer.Option(
        None, help="Liveness endpoint, e.g. http://0.0.0.0:8080/healthz."
    ),
    metrics_addr: str | None = typer.Option(
        None,
        help="Where /metrics listens: HOST:PORT or off [$FLEXJOB_METRICS_ADDR, else "
        "127.0.0.1:0]; beyond loopback it needs $FLEXJOB_METRICS_TOKEN.",
    ),
    job_master_state: bool = typer.Option(
        True,
        help="Keep each implicit job master's state on a PersistentVolumeClaim, so a relaunched "
        "master continues where it was (--no-job-master-state: it starts afresh).",
    ),
    job_master_state_claim: str = typer.Option(
        "",
        help="One existing PersistentVolumeClaim (in each job's namespace; ReadWriteMany when "
        "masters may run on different nodes) that every implicit job master keeps its state "
        "on [none: the operator creates a claim per job, owned by the job].",
    ),
    job_master_state_class: str = typer.Option(
        "",
        help="StorageClass of the per-job state claims [the cluster's default].",
    ),
    job_master_state_size: str = typer.Option(
        DEFAULT_STATE_SIZE, help="Size of the per-job state claims (a Kubernetes quantity)."
    ),
    brain_token_secret: str = typer.Option(
        "",
        help="Secret (key 'token', in each job's namespace) holding the brain's bearer token: "
        "implicit job masters of jobs with spec.brainService read it as $FLEXJOB_BRAIN_TOKEN "
        "(never on a command line) [none].",
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
) -> None:
    """Run the flexjob operator: reconcile ElasticJobs and ScalePlans into pods and services.

    With --platform local it runs the operator of local jobs (what `flexjob submit` runs),
    e.g. to restart it after it was killed: it adopts the replicas still running, never runs
    a replica that finished again, and refuses a job whose operator still runs. In the
    foreground it exits 0 only when the job Succeeded."""
    if platform_name == "local":
        _local_operator(jobs or [], namespace, detach)
        return
    if platform_name != "kubernetes":
        raise typer.BadParameter(
            f"{platform_name!r} is not one of kubernetes, local", param_hint="--platform"
        )
    if jobs or detach:
        raise typer.BadParameter("job names and --detach go with --platform local")
    from flexjob.operator.kubernetes.runner import OperatorConfig, WebhookConfig, run_operator
    from flexjob.platform.kubernetes import KubernetesPlatform

    if namespace and all_namespaces:
        raise typer.BadParameter("give either --namespace or --all-namespaces, not both")
    if (webhook_cert is None) != (webhook_key is None):
        raise typer.BadParameter("--webhook-cert and --webhook-key go together")
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO)
    if not verbose:  # kopf logs every handler call at INFO; keep warnings and our own lines
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    hooks = None
    if webhooks:
        hooks = WebhookConfig(
            addr=webhook_addr,
            port=webhook_port,
            certfile=str(webhook_cert) if webhook_cert else None,
            pkeyfile=str(webhook_key) if webhook_key else None,
        )
    options = OperatorConfig(
        namespaces=tuple(namespace),
        server=server,
        kubeconfig=str(kubeconfig) if kubeconfig else None,
        context=context,
        workers=workers,
        parallel=parallel,
        resync_interval=resync or None,
        webhooks=hooks,
        liveness=liveness,
        job_master_image=os.environ.get(ENV_IMAGE) or None,
        metrics_addr=metrics_addr,
        job_master_state=_master_state(
            job_master_state, job_master_state_claim, job_master_state_class, job_master_state_size
        ),
        job_master_brain_token_secret=brain_token_secret,
        settle_heap=True,
    )
    if pod_batch is not None:
        options = dataclasses.replace(options, pod_event_batch=pod_batch)
    if options.job_master_image is None:
        logging.getLogger(__name__).warning(
            "%s is not set: this operator runs no job masters, so a job that needs flexjob's "
            "(rdzvBackend: flexjob, dataset, batch, ps replicas...) fails (NoJobMaster)",
            ENV_IMAGE,
        )
    platform = KubernetesPlatform.from_config(options.kubeconfig, context, server)
    try:
        asyncio.run(run_operator(platform, options))
    except KeyboardInterrupt:
        pass
    finally:
        platform.close()


def _master_state(keep: bool, claim: str, storage_class: str, size: str) -> "MasterStateStorage":
    """The operator's ``--job-master-state*`` options as one setting; a claim or class given
    with ``--no-job-master-state`` is refused (it would be ignored)."""
    from flexjob.api.errors import InvalidSpecError
    from flexjob.core.operator.master_state import MasterStateStorage

    if not keep and (claim or storage_class):
        raise typer.BadParameter(
            "--no-job-master-state keeps no state: drop --job-master-state-claim and "
            "--job-master-state-class, or keep the state"
        )
    if claim and storage_class:
        raise typer.BadParameter(
            "--job-master-state-class is the class of per-job claims: with "
            "--job-master-state-claim no claim is created"
        )
    try:
        return MasterStateStorage(keep=keep, claim=claim, storage_class=storage_class, size=size)
    except InvalidSpecError as exc:
        raise typer.BadParameter(str(exc), param_hint="--job-master-state-size") from exc


def _local_operator(jobs: list[str], namespaces: list[str], detach: bool) -> None:
    from flexjob.api import JobPhase
    from flexjob.api.names import DEFAULT_NAMESPACE
    from flexjob.operator.local import runner as local_runner
    from flexjob.platform.local import LocalPlatform
    from flexjob.platform.local.leases import LeaseHeldError

    if len(namespaces) > 1:
        raise typer.BadParameter("--platform local takes one --namespace")
    namespace = namespaces[0] if namespaces else DEFAULT_NAMESPACE
    platform = LocalPlatform()
    if not jobs:
        orphaned = local_runner.jobs_without_operator(platform)
        for job in orphaned:
            pid = local_runner.start_detached(platform, job.namespace, job.name)
            typer.echo(f"job {job.namespace}/{job.name}: local operator pid {pid}")
        if not orphaned:
            typer.echo("every unfinished local job has a running operator")
        return
    if detach:
        for name in jobs:
            pid = local_runner.start_detached(platform, namespace, name)
            typer.echo(f"job {namespace}/{name}: local operator pid {pid}")
        return
    if len(jobs) > 1:
        raise typer.BadParameter("one job at a time in the foreground (or give --detach)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        final = local_runner.run_job(platform, namespace, jobs[0])
    except LeaseHeldError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    phase = final.status.phase.value if final is not None and final.status else "deleted"
    logging.getLogger(__name__).info("job %s/%s %s", namespace, jobs[0], phase)
    if phase != JobPhase.SUCCEEDED.value:  # like `flexjob submit`: 0 only for a Succeeded job
        raise typer.Exit(1)


def install(
    namespace: str = typer.Option("flexjob-system", help="Namespace of the operator."),
    image: str = typer.Option("ghcr.io/flexjob/flexjob:0.1.0", help="Operator image."),
    webhook_port: int = typer.Option(9443, help="Port the operator's webhook server listens on."),
    cert_manager: bool = typer.Option(
        True, help="Include a cert-manager Issuer/Certificate for the webhook TLS secret."
    ),
    job_namespace: list[str] = typer.Option(
        ["default"],
        "--job-namespace",
        help="Namespace (existing) whose jobs' implicit masters get the flexjob-job-master "
        "service account (repeatable).",
    ),
    metrics_token_secret: str = typer.Option(
        "",
        help="Secret (key 'token') whose bearer token Prometheus sends: exposes the operator's "
        "/metrics on port 9464 with scrape annotations, a Service and a ServiceMonitor.",
    ),
    apply: bool = typer.Option(False, help="Apply to the cluster instead of printing YAML."),
    kubeconfig: Path | None = typer.Option(None, help="Kubeconfig file (with --apply)."),
    context: str | None = typer.Option(None, help="Kubeconfig context (with --apply)."),
    server: str | None = typer.Option(
        None, help="API server URL without credentials (with --apply)."
    ),
) -> None:
    """Print (or --apply) the CRDs, RBAC, operator Deployment and admission webhooks."""
    from flexjob.api.load import dump_yaml
    from flexjob.operator.manifests import InstallConfig, install_manifests

    options = InstallConfig(
        namespace=namespace,
        image=image,
        webhook_port=webhook_port,
        cert_manager=cert_manager,
        job_namespaces=tuple(job_namespace),
        metrics_token_secret=metrics_token_secret,
    )
    manifests = install_manifests(options)
    if not apply:
        typer.echo("---\n".join(dump_yaml(m) for m in manifests), nl=False)
        return
    from flexjob.operator.apply_manifests import apply_manifests
    from flexjob.platform.kubernetes.connection import load_configuration

    configuration = load_configuration(str(kubeconfig) if kubeconfig else None, context, server)
    for line in apply_manifests(configuration, manifests):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    from flexjob.cli.manifests_app import manifests_app

    app.command("operator")(operator)
    manifests_app.command("install")(install)
