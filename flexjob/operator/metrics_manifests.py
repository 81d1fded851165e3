"""Prometheus scraping of the operator on Kubernetes, as plain manifest dicts.

With a metrics token Secret named (``InstallOptions.metrics_token_secret``), the operator's
Deployment listens for scrapes on ``0.0.0.0:9464`` (``names.METRICS_PORT``) with the token from
that Secret (key ``token``), its pod carries the ``prometheus.io/*`` scrape annotations, and a
Service plus a Prometheus-Operator ``ServiceMonitor`` (which sends the token) are added. Without
one, the operator's /metrics stays on loopback and nothing here is added. With one, each job
namespace also gets a ``PodMonitor`` of the jobs' pods (``core.operator.job_metrics``: their
/metrics on the pod's address, the token from that namespace's ``flexjob-job-metrics`` Secret). Pure
data.
"""

import copy
from typing import Any

from flexjob.api.names import ENV_METRICS_ADDR, ENV_METRICS_TOKEN, METRICS_PORT
from flexjob.core.operator import job_metrics

Body = dict[str, Any]
PORT_NAME = job_metrics.PORT_NAME
TOKEN_KEY = job_metrics.TOKEN_KEY
SCRAPE_ANNOTATIONS = job_metrics.SCRAPE_ANNOTATIONS


def with_metrics(deployment: Body, secret: str) -> Body:
    """``deployment`` with its first container serving /metrics beyond loopback (token from
    ``secret``) and its pod annotated for scraping."""
    body = copy.deepcopy(deployment)
    template = body["spec"]["template"]
    template["metadata"].setdefault("annotations", {}).update(SCRAPE_ANNOTATIONS)
    container = template["spec"]["containers"][0]
    container.setdefault("env", []).extend(
        [
            {"name": ENV_METRICS_ADDR, "value": f"0.0.0.0:{METRICS_PORT}"},
            {
                "name": ENV_METRICS_TOKEN,
                "valueFrom": {"secretKeyRef": {"name": secret, "key": TOKEN_KEY}},
            },
        ]
    )
    container.setdefault("ports", []).append({"name": PORT_NAME, "containerPort": METRICS_PORT})
    return body


def metrics_service(name: str, namespace: str, selector: dict[str, str]) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": f"{name}-metrics",
            "namespace": namespace,
            "labels": {**selector, "flexjob.dev/metrics": "true"},
            "annotations": dict(SCRAPE_ANNOTATIONS),
        },
        "spec": {
            "selector": selector,
            "ports": [{"name": PORT_NAME, "port": METRICS_PORT, "targetPort": PORT_NAME}],
        },
    }


def service_monitor(name: str, namespace: str, selector: dict[str, str], secret: str) -> Body:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(selector)},
        "spec": {
            "selector": {"matchLabels": {**selector, "flexjob.dev/metrics": "true"}},
            "endpoints": [
                {
                    "port": PORT_NAME,
                    "path": "/metrics",
                    "interval": "15s",
                    "bearerTokenSecret": {"name": secret, "key": TOKEN_KEY},
                }
            ],
        },
    }


def job_pod_monitor(namespace: str) -> Body:
    """The PodMonitor of the job pods in ``namespace``: their ``metrics`` port with the
    namespace's job metrics token (the operator creates that Secret with the first job)."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": "flexjob-jobs", "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {job_metrics.LABEL_METRICS: "true"}},
            "podMetricsEndpoints": [
                {
                    "port": PORT_NAME,
                    "path": "/metrics",
                    "interval": "15s",
                    "bearerTokenSecret": {"name": job_metrics.JOB_METRICS_SECRET, "key": TOKEN_KEY},
                }
            ],
        },
    }
