"""Job objects for server tests."""

from flexjob.api import ElasticJob, ObjectMeta, ReplicaSpec, ReplicaType


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
    learner: dict[str, object] = {"replicas": 1}
    if learner_gpus:
        learner["template"] = {
            "spec": {
                "containers": [
                    {"name": "learner", "resources": {"limits": {"nvidia.com/gpu": learner_gpus}}}
                ]
            }
        }
    specs: dict[str, object] = {
        "coordinator": {"replicas": 1},
        "collector": {"replicas": 1},
        "learner": learner,
    }
    if aggregator:
        specs["aggregator"] = {"replicas": 0}
    return ElasticJob(metadata=ObjectMeta(name=name), spec={"replicaSpecs": specs})


__all__ = ["ReplicaType", "di_v1_job", "elastic_job"]
