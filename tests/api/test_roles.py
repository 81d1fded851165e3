"""The role-traits table and the replica bounds: the one owner of each rule."""

import pytest

from flexjob.api import ReplicaSpec, ReplicaType
from flexjob.api.bounds import ReplicaBounds, replica_bounds, scale_limits
from flexjob.api.roles import (
    DEFAULT_TYPE,
    DI_FIELDS,
    MASTER_TYPE,
    PS_TYPE,
    ROLE_TRAITS,
    TOKEN_HOLDERS,
    TRAINING_TYPES,
    command_of,
    controlling_type,
    creation_order,
    driving_type,
    job_training_type,
    main_training_type,
    on_request_types,
    scalable_types,
    scaling_target,
    type_named,
)

R = ReplicaType


def test_every_replica_type_has_a_row_of_traits() -> None:
    assert set(ROLE_TRAITS) == set(ReplicaType)


def test_the_master_controls_the_job_and_is_never_scaled() -> None:
    assert controlling_type([R.WORKER, R.MASTER]) is R.MASTER
    assert controlling_type([R.WORKER, R.PS]) is None
    assert scalable_types([R.MASTER, R.WORKER, R.PS]) == [R.WORKER, R.PS]
    assert creation_order([R.WORKER, R.PS, R.MASTER]) == [R.MASTER, R.WORKER, R.PS]


def test_training_types_are_worker_chief_learner_collector() -> None:
    assert {R.WORKER, R.CHIEF, R.LEARNER, R.COLLECTOR} == TRAINING_TYPES


@pytest.mark.parametrize(
    ("types", "target"),
    [
        ([R.MASTER, R.PS, R.WORKER], R.WORKER),
        ([R.COLLECTOR, R.LEARNER], R.LEARNER),
        ([R.COORDINATOR, R.COLLECTOR], R.COLLECTOR),
        ([R.PS, R.EVALUATOR], R.PS),
        ([R.MASTER, R.EVALUATOR, R.CHIEF], R.EVALUATOR),
        ([R.MASTER], None),
    ],
)
def test_the_scaling_target_is_the_lowest_ranked_type_else_the_first_scalable(
    types: list[ReplicaType], target: ReplicaType | None
) -> None:
    assert scaling_target(types) is target


def test_the_main_training_type_prefers_the_worker() -> None:
    assert main_training_type([R.CHIEF, R.WORKER]) is R.WORKER
    assert main_training_type([R.CHIEF, R.EVALUATOR]) is R.CHIEF
    assert main_training_type([R.PS, R.MASTER]) is None


@pytest.mark.parametrize(
    ("replicas", "low", "high", "bounds"),
    [
        (None, None, None, ReplicaBounds(1, 1, 1)),
        (3, None, None, ReplicaBounds(3, 3, 3)),
        (None, 2, None, ReplicaBounds(2, 2, 2)),
        (None, None, 4, ReplicaBounds(1, 1, 4)),
        (3, None, 2, ReplicaBounds(2, 3, 2)),
        (2, 1, None, ReplicaBounds(1, 2, 2)),
        (2, 1, 5, ReplicaBounds(1, 2, 5)),
    ],
)
def test_replica_bounds_fill_unset_fields_one_way(
    replicas: int | None, low: int | None, high: int | None, bounds: ReplicaBounds
) -> None:
    spec = ReplicaSpec(replicas=replicas, min_replicas=low, max_replicas=high)
    assert replica_bounds(spec) == bounds


def test_clamp_keeps_a_count_within_the_bounds() -> None:
    bounds = ReplicaBounds(2, 3, 5)
    assert [bounds.clamp(n) for n in (0, 2, 4, 9)] == [2, 2, 4, 5]


def test_scale_limits_name_the_declared_bound_a_request_breaks() -> None:
    spec = ReplicaSpec(replicas=2, min_replicas=1, max_replicas=4)
    assert scale_limits(spec, 0) == "below minReplicas 1"
    assert scale_limits(spec, 5) == "above maxReplicas 4"
    assert scale_limits(spec, 3) is None
    assert scale_limits(ReplicaSpec(replicas=1), 7) is None
    assert scale_limits(ReplicaSpec(replicas=1), -1) == "below 0"


def test_a_coordinator_drives_its_job_and_the_other_di_roles_come_on_request() -> None:
    di = [R.COORDINATOR, R.COLLECTOR, R.LEARNER, R.AGGREGATOR]
    assert driving_type(di) is R.COORDINATOR
    assert creation_order(di)[0] is R.COORDINATOR
    assert on_request_types(di) == [R.COLLECTOR, R.LEARNER, R.AGGREGATOR]
    assert on_request_types([R.COLLECTOR, R.LEARNER]) == []  # DIJob v2: tasks keep replicas
    assert [ROLE_TRAITS[t].default_port for t in di] == [22273, 22270, 22271, 22272]


def test_the_table_names_the_master_the_ps_and_who_holds_the_job_token() -> None:
    assert (MASTER_TYPE, PS_TYPE) == (R.MASTER, R.PS)
    assert {R.MASTER} == TOKEN_HOLDERS  # a PS holds its PS secret (rpc.ps_auth), not the token
    assert (command_of(MASTER_TYPE), command_of(PS_TYPE)) == ("master", "ps")
    with pytest.raises(ValueError, match="worker runs no flexjob command"):
        command_of(R.WORKER)


def test_a_job_is_planned_on_its_main_training_type_else_the_default_type() -> None:
    assert job_training_type([R.PS, R.WORKER]) is R.WORKER
    assert job_training_type([R.COLLECTOR, R.LEARNER]) is R.LEARNER
    assert job_training_type([]) is DEFAULT_TYPE is R.WORKER


def test_a_type_name_we_do_not_know_reads_as_the_default_type() -> None:
    assert type_named("learner") is R.LEARNER
    assert type_named("") is type_named("trainer") is DEFAULT_TYPE


def test_di_fields_list_collectors_learners_and_aggregators_in_that_order() -> None:
    assert list(DI_FIELDS.items()) == [
        ("collectors", R.COLLECTOR),
        ("learners", R.LEARNER),
        ("aggregators", R.AGGREGATOR),
    ]
