"""Status patches: the diff a writer sends, restricted to its fields, and merging one in."""

import pytest

from flexjob.api import ElasticJobStatus, JobPhase, ReplicaStatus, ReplicaType
from flexjob.core.operator.status_patch import (
    OWNED_FIELDS,
    STATUS_FIELDS,
    InvalidStatusPatchError,
    StatusOwner,
    apply_status_patch,
    compose_patches,
    merge_patch,
    normalize_status_patch,
    owner_patch,
    status_patch,
)

W, E = ReplicaType.WORKER, ReplicaType.EVALUATOR


def test_unchanged_status_gives_an_empty_patch() -> None:
    status = ElasticJobStatus(phase=JobPhase.RUNNING, replicas={W: 2})
    assert owner_patch(status, status.model_copy(deep=True), StatusOwner.OPERATOR) == {}


def test_operator_patch_leaves_out_fields_it_does_not_own() -> None:
    before = ElasticJobStatus()
    after = ElasticJobStatus(
        phase=JobPhase.RUNNING, allocation={W: ["n1"]}, profilings={"2": 1.0}, restart_count=1
    )
    assert owner_patch(before, after, StatusOwner.OPERATOR) == {
        "phase": "Running",
        "restartCount": 1,
    }


def test_operator_that_left_replicas_alone_does_not_write_them_back() -> None:
    before = ElasticJobStatus(replicas={W: 2, E: 1})
    after = before.model_copy(deep=True)
    after.phase = JobPhase.STARTING
    assert "replicas" not in owner_patch(before, after, StatusOwner.OPERATOR)


def test_changed_map_fields_carry_only_the_changed_keys_and_null_for_removed_ones() -> None:
    before = ElasticJobStatus(replicas={W: 2, E: 1})
    after = ElasticJobStatus(replicas={W: 4})
    assert owner_patch(before, after, StatusOwner.SERVER) == {
        "replicas": {"worker": 4, "evaluator": None}
    }


def test_nested_objects_are_diffed_recursively() -> None:
    before = ElasticJobStatus(replica_statuses={W: ReplicaStatus(active=1, pending=1)})
    after = ElasticJobStatus(replica_statuses={W: ReplicaStatus(active=2)})
    assert owner_patch(before, after, StatusOwner.OPERATOR) == {
        "replicaStatuses": {"worker": {"active": 2, "pending": 0}}
    }


def test_a_diff_applied_to_the_old_status_gives_the_new_one() -> None:
    before = ElasticJobStatus(replicas={W: 2}, profilings={"a": {"x": 1}}, start_time="t0")
    after = ElasticJobStatus(replicas={E: 1}, profilings={"a": {"y": 2}}, phase=JobPhase.FAILED)
    fields = ["replicas", "profilings", "startTime", "phase"]
    assert apply_status_patch(before, status_patch(before, after, fields)) == after


def test_merge_patch_merges_objects_and_replaces_lists() -> None:
    target = {"a": {"b": 1, "c": 2}, "l": [1, 2]}
    assert merge_patch(target, {"a": {"c": None, "d": 3}, "l": [3]}) == {
        "a": {"b": 1, "d": 3},
        "l": [3],
    }
    assert target == {"a": {"b": 1, "c": 2}, "l": [1, 2]}


def test_snake_case_names_and_enums_are_normalised_to_the_wire_form() -> None:
    patch = normalize_status_patch(
        {"restart_count": 2, "replicas": {W: 3}, "phase": JobPhase.RUNNING}
    )
    assert patch == {"restartCount": 2, "replicas": {"worker": 3}, "phase": "Running"}


def test_unknown_field_is_refused_with_the_allowed_names() -> None:
    with pytest.raises(InvalidStatusPatchError, match=r"unknown field\(s\) bogus; allowed: alloc"):
        normalize_status_patch({"bogus": 1})


def test_bad_value_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidStatusPatchError, match=r"replicas\.worker"):
        normalize_status_patch({"replicas": {"worker": "many"}})


def test_every_owned_field_is_a_status_field_and_every_field_has_an_owner() -> None:
    owned = set().union(*OWNED_FIELDS.values())
    assert owned <= STATUS_FIELDS
    assert STATUS_FIELDS - owned == set()


def test_two_patches_composed_do_what_applying_one_then_the_other_does() -> None:
    status = ElasticJobStatus(phase=JobPhase.RUNNING, restart_count=2, message="ok")
    first = {"phase": "Restarting", "restartCount": 3, "replicaStatuses": {"worker": {"active": 1}}}
    then = {"phase": "Running", "message": None, "replicaStatuses": {"worker": {"failed": 1}}}
    one_by_one = apply_status_patch(apply_status_patch(status, first), then)
    assert apply_status_patch(status, compose_patches(first, then)) == one_by_one
    assert one_by_one.message == "" and one_by_one.restart_count == 3
