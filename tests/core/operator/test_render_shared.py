"""Replicas a pass renders from one shared type template (``replica_plan.type_template``, made
once per pass, type and resources) are each what rendering it alone gives, and own every part
they set: one replica's env, labels or node never show up in another's or in the template."""

from typing import Any

from flexjob.api import ReplicaType, ResourceSpec
from flexjob.api.load import job_from_dict
from flexjob.core.operator.replica_plan import render_replica, type_template
from tests.api.specs import valid_job

WORKER = ReplicaType.WORKER


def _job() -> Any:
    doc = valid_job()
    doc["spec"]["envs"] = {"DATA": "/data"}
    doc["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    return job_from_dict(doc)


def test_replicas_rendered_from_a_shared_template_equal_those_rendered_alone() -> None:
    job = _job()
    resources = ResourceSpec(cpu=2, memory=4096)
    shared = type_template(job, WORKER, resources)
    untouched = shared.to_wire()
    args: list[dict[str, Any]] = [
        {"index": 0, "node": "node-a", "own_address": None},
        {"index": 1, "node": None, "own_address": "10.0.0.2:2222"},
        {"index": 2, "node": "node-b", "own_address": None},
    ]
    together = [
        render_replica(job, WORKER, master_address="m:1", resources=resources, shared=shared, **a)
        for a in args
    ]
    alone = [
        render_replica(job, WORKER, master_address="m:1", resources=resources, **a) for a in args
    ]
    assert [r.template.to_wire() for r in together] == [r.template.to_wire() for r in alone]
    assert together == alone
    assert shared.to_wire() == untouched  # nothing a replica set went into the shared one
    envs = [r.template.spec.containers[0].env for r in together]
    assert [e.value for env in envs for e in env if e.name == "FLEXJOB_REPLICA_INDEX"] == [
        "0",
        "1",
        "2",
    ]
    assert [r.template.spec.node_selector for r in together] == [
        {"kubernetes.io/hostname": "node-a"},
        {},
        {"kubernetes.io/hostname": "node-b"},
    ]
    assert [r.labels["flexjob.dev/replica-index"] for r in together] == ["0", "1", "2"]
    assert together[0].template.spec.containers[0].resources.limits == {
        "cpu": "2",
        "memory": "4096Mi",
    }
