"""How a Kubernetes job's pods are scraped: their ``/metrics`` on the pod's address.

On Kubernetes (``JobMasterConfig.token_secret``) every replica of a flexjob job (the master,
the agents, the PS) listens for scrapes on ``0.0.0.0:9464`` (``names.METRICS_PORT``) in its
pod, on a container port named ``metrics``, and its pod carries the ``prometheus.io/*``
scrape annotations. Beyond loopback a token is required (``observe.metrics_http``): it comes
from the Secret ``flexjob-job-metrics`` (key ``token``) in the job's namespace, which the
operator creates once per namespace (it outlives each job), and which the PodMonitor of
``operator.metrics_manifests`` sends. Pure: no I/O.
"""

from flexjob.api import EnvVar, ReplicaSpec
from flexjob.api.names import ENV_METRICS_ADDR, ENV_METRICS_TOKEN, METRICS_PORT
from flexjob.api.pod import ContainerPort

#: The Secret (one per job namespace, key ``token``) whose token every job pod's /metrics asks.
JOB_METRICS_SECRET = "flexjob-job-metrics"
TOKEN_KEY = "token"
PORT_NAME = "metrics"
#: Label of the pods the PodMonitor selects.
LABEL_METRICS = "flexjob.dev/metrics"
SCRAPE_ANNOTATIONS = {
    "prometheus.io/scrape": "true",
    "prometheus.io/port": str(METRICS_PORT),
    "prometheus.io/path": "/metrics",
}


def with_metrics_endpoint(spec: ReplicaSpec) -> ReplicaSpec:
    """``spec`` whose main container serves /metrics on the pod's address with the namespace's
    token, its port named and its pod annotated and labelled for scraping."""
    template = spec.template.model_copy(deep=True)
    meta = template.metadata
    meta["annotations"] = {**(meta.get("annotations") or {}), **SCRAPE_ANNOTATIONS}
    meta["labels"] = {**(meta.get("labels") or {}), LABEL_METRICS: "true"}
    if template.spec.containers:
        main = template.spec.containers[0]
        ref = {"secretKeyRef": {"name": JOB_METRICS_SECRET, "key": TOKEN_KEY}}
        extra = (ENV_METRICS_ADDR, ENV_METRICS_TOKEN)
        main.env = [
            *(e for e in main.env if e.name not in extra),
            EnvVar(name=ENV_METRICS_ADDR, value=f"0.0.0.0:{METRICS_PORT}"),
            EnvVar.model_validate({"name": ENV_METRICS_TOKEN, "valueFrom": ref}),
        ]
        if not any(p.name == PORT_NAME for p in main.ports):
            main.ports = [*main.ports, ContainerPort(container_port=METRICS_PORT, name=PORT_NAME)]
    return spec.model_copy(update={"template": template})
