"""``flexjob operator`` (run the kopf operator) and ``flexjob manifests install`` (what to apply).

Only argument handling and printing here: the operator is ``flexjob.operator.kubernetes.runner``,
the manifests ``flexjob.operator.manifests``. kopf and the Kubernetes client are imported inside
the commands so that ``flexjob --help`` stays fast.
"""

import asyncio
import logging
import os
from pathlib import Path

import typer

from flexjob.api.names import ENV_IMAGE


def operator(
    namespace: list[str] = typer.Option(
        [], "--namespace", "-n", help="Serve only these namespaces (repeatable)."
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
    parallel: int = typer.Option(4, min=1, help="Pod creations/deletions one pass sends at once."),
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
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
) -> None:
    """Run the flexjob operator: reconcile ElasticJobs and ScalePlans into pods and services."""
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
    )
    platform = KubernetesPlatform.from_config(options.kubeconfig, context, server)
    try:
        asyncio.run(run_operator(platform, options))
    except KeyboardInterrupt:
        pass
    finally:
        platform.close()


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
