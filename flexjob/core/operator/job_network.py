"""The NetworkPolicy that fences a job's master and PS replicas on Kubernetes: only the job's own
pods reach them.

A job master listens on ``0.0.0.0``: its gRPC port (``FLEXJOB_MASTER``'s, a token or a node
credential on every call) and the job's torch TCPStore (``master.main._store_listener``), which
has no authentication and takes an ephemeral port. A PS replica serves its gRPC port to the
job's members. ``job_network_policy`` selects the job's master and PS pods (``LABEL_JOB_NAME``
and ``LABEL_REPLICA_TYPE``) and admits, on every port, the pods of the same job only (same
namespace, ``LABEL_JOB_NAME``): the store's port is not known in advance, so no port list can
name it. The only other way in is the metrics port (``names.METRICS_PORT``, bearer-token
guarded, ``core.operator.job_metrics``), from anywhere, for Prometheus. The operator creates it
(owned by the job) before the job's master (``operator.reconcile_pass``). A NetworkPolicy needs
a CNI that enforces it (Calico, Cilium, ...); without one it changes nothing. Pure: no I/O.
"""

from typing import Any

from flexjob.api.names import LABEL_JOB_NAME, LABEL_REPLICA_TYPE, METRICS_PORT
from flexjob.api.roles import MASTER_TYPE, PS_TYPE


def job_network_policy_name(job: str) -> str:
    return f"{job}-master"


def job_network_policy(namespace: str, job: str) -> dict[str, Any]:
    """The NetworkPolicy body of ``job`` in ``namespace``: its master and PS pods admit the
    job's own pods (every port) and the metrics port (from anywhere)."""
    fenced = {
        "matchLabels": {LABEL_JOB_NAME: job},
        "matchExpressions": [
            {
                "key": LABEL_REPLICA_TYPE,
                "operator": "In",
                "values": [MASTER_TYPE.value, PS_TYPE.value],
            }
        ],
    }
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": job_network_policy_name(job),
            "namespace": namespace,
            "labels": {LABEL_JOB_NAME: job},
        },
        "spec": {
            "podSelector": fenced,
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [{"podSelector": {"matchLabels": {LABEL_JOB_NAME: job}}}]},
                {"ports": [{"protocol": "TCP", "port": METRICS_PORT}]},
            ],
        },
    }
