"""``flexjob manifests``: Kubernetes manifests generated from the models.

``manifests_app`` is the Typer sub-app; other CLI modules add their commands to it (e.g. the
operator's ``manifests install``) by importing it in their ``register``.
"""

import typer

from flexjob.api.crd import crds
from flexjob.api.load import dump_yaml
from flexjob.cli.apps import new_app

manifests_app = new_app(
    name="manifests", help="Print Kubernetes manifests for flexjob.", no_args_is_help=True
)


@manifests_app.command("crds")
def print_crds() -> None:
    """Print the ElasticJob and ScalePlan CustomResourceDefinitions as YAML."""
    typer.echo("---\n".join(dump_yaml(crd) for crd in crds()), nl=False)


def register(app: typer.Typer) -> None:
    app.add_typer(manifests_app, name="manifests")
