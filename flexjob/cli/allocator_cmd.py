"""``flexjob allocator``: run the Allocator — a policy placing and resizing jobs every period.

``--node 16x4`` (count x GPUs) or ``--node NAME:gpu=4,cpu=32,memory=128Gi`` (repeatable)
describe the nodes; with ``--platform kubernetes`` and no ``--node`` the cluster's nodes are
read from the API. Results go to each job's ``status.allocation``.
"""

import contextlib

import typer

from flexjob.cli.errors import usage_error
from flexjob.scheduler import DEFAULT_POLICY


def _allocator(
    policy: str = typer.Option(DEFAULT_POLICY, help="Policy name, entry point or module:Class."),
    node: list[str] = typer.Option([], "--node", help="COUNTxGPUS or NAME:gpu=..,cpu=..,memory=.."),
    period: float = typer.Option(60.0, min=1.0, help="Seconds between optimize rounds."),
    interval: float = typer.Option(5.0, min=0.1, help="Seconds between rounds."),
    namespace: str | None = typer.Option(None, help="Only jobs of this namespace."),
    platform: str | None = typer.Option(
        None, help="local or kubernetes (default $FLEXJOB_PLATFORM)."
    ),
    once: bool = typer.Option(False, help="Run one round, print what changed, and exit."),
) -> None:
    """Place and resize jobs with an allocation policy."""
    import signal
    import threading

    from flexjob.platform.registry import open_platform
    from flexjob.scheduler.allocator import Allocator, NodeSource
    from flexjob.scheduler.nodes import NodeSpecError, parse_nodes
    from flexjob.scheduler.registry import UnknownPolicyError, load_policy

    try:
        chosen = load_policy(policy)
        backend = open_platform(platform)
    except (UnknownPolicyError, ValueError) as exc:
        raise usage_error(exc) from None
    try:
        nodes: NodeSource
        if node:
            nodes = parse_nodes(node)
        elif backend.name == "kubernetes":
            from kubernetes import client, config

            from flexjob.scheduler.nodes import KubernetesNodes

            config.load_config()  # type: ignore[no-untyped-call]
            nodes = KubernetesNodes(client.CoreV1Api())
        else:
            raise NodeSpecError("--node: required on the local platform (e.g. --node 2x4)")
    except NodeSpecError as exc:
        backend.close()
        raise usage_error(exc) from None
    allocator = Allocator(backend, chosen, nodes, period=period, namespace=namespace)
    try:
        if once:
            for job, placed in sorted(allocator.step().items()):
                typer.echo(f"{job}: {', '.join(placed) or '(not placed)'}")
            return
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        with contextlib.suppress(KeyboardInterrupt):
            allocator.run(stop, interval)
    finally:
        backend.close()


def register(app: typer.Typer) -> None:
    app.command("allocator")(_allocator)
