"""Scraping the operator on Kubernetes: with a token Secret named, `flexjob manifests install`
exposes /metrics with the token, annotates the pod and adds a Service and a ServiceMonitor."""

from typing import Any

import yaml
from typer.testing import CliRunner

from flexjob.api.names import ENV_METRICS_ADDR, ENV_METRICS_TOKEN, METRICS_PORT
from flexjob.cli.main import app


def install(*flags: str) -> dict[str, list[dict[str, Any]]]:
    result = CliRunner().invoke(app, ["manifests", "install", *flags])
    assert result.exit_code == 0, result.output
    kinds: dict[str, list[dict[str, Any]]] = {}
    for doc in yaml.safe_load_all(result.output):
        kinds.setdefault(doc["kind"], []).append(doc)
    return kinds


def test_a_token_secret_exposes_annotated_metrics_and_a_service_monitor() -> None:
    kinds = install("--metrics-token-secret", "scrape-token")
    (deployment,) = kinds["Deployment"]
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(METRICS_PORT)
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    assert env[ENV_METRICS_ADDR]["value"] == f"0.0.0.0:{METRICS_PORT}"
    ref = env[ENV_METRICS_TOKEN]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "scrape-token", "key": "token"}
    service = next(s for s in kinds["Service"] if s["metadata"]["name"].endswith("-metrics"))
    assert service["spec"]["selector"] == pod["metadata"]["labels"]
    (monitor,) = kinds["ServiceMonitor"]
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"] == "metrics"
    assert endpoint["bearerTokenSecret"] == {"name": "scrape-token", "key": "token"}


def test_without_a_token_secret_metrics_stay_on_loopback() -> None:
    kinds = install()
    (deployment,) = kinds["Deployment"]
    env = {e["name"] for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert ENV_METRICS_ADDR not in env and "ServiceMonitor" not in kinds
