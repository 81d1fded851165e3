"""Defaults as a mutating webhook applies them: pure, idempotent, and expressible as a JSON
patch."""

import copy
from pathlib import Path
from typing import Any

import pytest

from flexjob.api import (
    CleanPodPolicy,
    DistributionStrategy,
    ElasticJob,
    OptimizeMode,
    ReplicaType,
    RestartPolicy,
)
from flexjob.api.defaults import apply_defaults, defaults_patch, json_patch
from flexjob.api.load import load_job
from tests.api.specs import JOB_EXAMPLES, edited, set_


def _job(raw: dict[str, Any]) -> ElasticJob:
    return ElasticJob.model_validate(raw)


def _apply_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    for op in ops:
        keys = [k.replace("~1", "/").replace("~0", "~") for k in op["path"].split("/")[1:]]
        target = out
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = op["value"]
    return out


@pytest.mark.parametrize("path", JOB_EXAMPLES, ids=lambda p: p.name)
def test_defaults_are_idempotent(path: Path) -> None:
    once = apply_defaults(load_job(path))
    assert apply_defaults(once) == once


def test_defaults_do_not_change_the_input() -> None:
    job = _job(edited())
    before = job.model_copy(deep=True)
    apply_defaults(job)
    assert job == before


def test_job_level_defaults() -> None:
    spec = apply_defaults(_job(edited())).spec
    assert spec.clean_pod_policy is CleanPodPolicy.RUNNING
    assert spec.backoff_limit == 3
    assert spec.preemptible is False
    assert spec.optimize_mode is None  # no flexjob master, so no optimizer: no mode to default
    assert spec.distribution_strategy is DistributionStrategy.ALLREDUCE
    with_master = edited(set_("spec.elasticPolicy", {"rdzvBackend": "flexjob"}))
    assert apply_defaults(_job(with_master)).spec.optimize_mode is OptimizeMode.SINGLE_JOB


def test_ps_replicas_default_to_parameter_server_strategy() -> None:
    raw = edited(set_("spec.replicaSpecs.ps", {"replicas": 1}))
    assert (
        apply_defaults(_job(raw)).spec.distribution_strategy
        is DistributionStrategy.PARAMETER_SERVER
    )


def test_user_values_are_kept() -> None:
    raw = edited(set_("spec.cleanPodPolicy", "None"), set_("spec.backoffLimit", 0))
    spec = apply_defaults(_job(raw)).spec
    assert (spec.clean_pod_policy, spec.backoff_limit) == (CleanPodPolicy.NONE, 0)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, (1, 1, 1)),
        ({"replicas": 3}, (3, 3, 3)),
        ({"minReplicas": 2}, (2, 2, 2)),
        ({"maxReplicas": 4}, (1, 1, 4)),
        ({"replicas": 2, "maxReplicas": 6}, (2, 2, 6)),
        ({"minReplicas": 1, "maxReplicas": 4}, (1, 1, 4)),
    ],
)
def test_replica_counts_default_from_each_other(
    given: dict[str, int], expected: tuple[int, int, int]
) -> None:
    raw = edited(set_("spec.replicaSpecs.worker", given))
    worker = apply_defaults(_job(raw)).spec.replica_specs[ReplicaType.WORKER]
    assert (worker.replicas, worker.min_replicas, worker.max_replicas) == expected
    assert worker.restart_policy is RestartPolicy.ON_FAILURE


def test_unnamed_container_is_named_main() -> None:
    raw = edited(set_("spec.replicaSpecs.worker.template.spec.containers[0].name", ""))
    worker = apply_defaults(_job(raw)).spec.replica_specs[ReplicaType.WORKER]
    assert worker.template.spec.containers[0].name == "main"


def test_patch_turns_the_raw_object_into_the_defaulted_one() -> None:
    raw = edited()
    patched = _apply_patch(raw, defaults_patch(raw))
    assert _job(patched) == apply_defaults(_job(raw))


def test_patch_adds_missing_fields_with_json_pointers() -> None:
    ops = defaults_patch(edited())
    assert {"op": "add", "path": "/spec/cleanPodPolicy", "value": "Running"} in ops
    assert {"op": "add", "path": "/spec/backoffLimit", "value": 3} in ops


def test_patch_of_a_defaulted_object_is_empty() -> None:
    defaulted = apply_defaults(_job(edited())).to_wire()
    assert defaults_patch(defaulted) == []


def test_json_patch_escapes_pointer_characters() -> None:
    ops = json_patch({"a": {}}, {"a": {"x/y~z": 1}})
    assert ops == [{"op": "add", "path": "/a/x~1y~0z", "value": 1}]


def test_patch_of_an_invalid_object_is_empty() -> None:
    assert defaults_patch(edited(set_("spec.cleanPodPolicy", "Sometimes"))) == []
