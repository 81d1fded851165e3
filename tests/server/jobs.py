"""Job objects for server tests, and the DI create call they make."""

from typing import Any

from fastapi.testclient import TestClient

from flexjob.api import ElasticJob, ObjectMeta, ReplicaSpec, ReplicaType
from flexjob.api.defaults import apply_defaults
from flexjob.api.load import job_from_dict


def elastic_job(
    name: str = "mnist",
    *,
    preemptible: bool = True,
    replicas: int = 2,
    lo: int = 1,
    hi: int = 4,
    namespace: str = "default",
) -> ElasticJob:
    return ElasticJob(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec={
            "preemptible": preemptible,
            "replicaSpecs": {
                "worker": ReplicaSpec(replicas=replicas, min_replicas=lo, max_replicas=hi),
            },
        },
    )


def di_v1_job(
    name: str = "cartpole", *, learner_gpus: int = 0, aggregator: bool = True
) -> ElasticJob:
    """A DIJob v1 as a user writes it (templates only), read and defaulted as the operator does;
    with ``aggregator``, the cluster's AggregatorConfig beside it."""

    def role(rtype: str, port: int, gpus: int = 0) -> dict[str, Any]:
        container: dict[str, Any] = {
            "name": rtype,
            "image": "opendilab/ding:v0.5.3",
            "ports": [{"containerPort": port}],
        }
        if gpus:
            container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
        return {"template": {"spec": {"containers": [container]}}}

    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "diengine.opendilab.org/v1alpha1",
            "kind": "DIJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "coordinator": role("coordinator", 22273),
                "collector": role("collector", 22270),
                "learner": role("learner", 22271, learner_gpus),
            },
        }
    ]
    if aggregator:
        docs.append(
            {
                "apiVersion": "diengine.opendilab.org/v1alpha1",
                "kind": "AggregatorConfig",
                "metadata": {"name": "aggregator-config"},
                "spec": {"aggregator": role("aggregator", 22272)},
            }
        )
    return apply_defaults(job_from_dict(docs[0], docs[1:]))


__all__ = ["ReplicaType", "di_v1_job", "elastic_job"]


def created(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /v1alpha2/replicas`` (DI's create call) with ``body``, asserted to succeed: the
    reply's ``data`` (the new replicas by role)."""
    resp = client.post("/v1alpha2/replicas", json=body)
    assert resp.status_code == 200, resp.text
    data: dict[str, Any] = resp.json()["data"]
    return data
