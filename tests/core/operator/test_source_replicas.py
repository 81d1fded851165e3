"""``core.operator.source_replicas``: which writes of a DIJob v2's ``status.replicas`` are
someone else's edits, and what an edited total does to the job's counts."""

import pytest

from flexjob.api import ElasticJob, JobPhase, ObjectMeta, ReplicaSpec, ReplicaType
from flexjob.api.job import ElasticJobStatus
from flexjob.core.operator.source_replicas import Written, edited_total, replicas_for_total

OURS = Written(version=10, replicas=4)


@pytest.mark.parametrize(
    ("status", "version", "ours", "edited"),
    [
        ({"replicas": 6}, 11, OURS, 6),  # after our last write, another value: an edit
        ({"replicas": 0}, 11, OURS, 0),
        ({"replicas": 4}, 11, OURS, None),  # a later write that left replicas as we wrote it
        ({"replicas": 6}, 10, OURS, None),  # our own write
        ({"replicas": 6}, 9, OURS, None),  # older than our last write (a late event)
        ({"replicas": 6}, 11, None, None),  # we wrote nothing yet: nothing to tell it from
        ({"replicas": "6"}, 11, OURS, None),  # not a count
        ({"replicas": True}, 11, OURS, None),
        ({}, 11, OURS, None),
        (None, 11, OURS, None),
    ],
)
def test_an_edit_is_a_later_write_by_someone_else_of_another_count(
    status: dict[str, object] | None, version: int, ours: Written | None, edited: int | None
) -> None:
    assert edited_total(status, version, ours) == edited


def _job(*, preemptible: bool = True, phase: JobPhase = JobPhase.RUNNING) -> ElasticJob:
    bounds = {"min_replicas": 1, "max_replicas": 64} if preemptible else {}
    return ElasticJob(
        metadata=ObjectMeta(name="gobigger", namespace="default"),
        spec={
            "preemptible": preemptible,
            "replicaSpecs": {
                ReplicaType.LEARNER: ReplicaSpec(replicas=1, **bounds),
                ReplicaType.COLLECTOR: ReplicaSpec(replicas=2, **bounds),
            },
        },
        status=ElasticJobStatus(phase=phase),
    )


COUNTS = {ReplicaType.LEARNER: 1, ReplicaType.COLLECTOR: 2}


def test_the_difference_goes_to_the_type_the_scaling_apis_resize() -> None:
    assert replicas_for_total(_job(), COUNTS, 6).replicas == {ReplicaType.LEARNER: 4}
    assert replicas_for_total(_job(), COUNTS, 4).replicas == {ReplicaType.LEARNER: 2}


@pytest.mark.parametrize(
    ("job", "total", "problem"),
    [
        (
            _job(preemptible=False),
            6,
            "status.replicas: 6: job default/gobigger is not preemptible (its size is fixed)",
        ),
        (_job(), -1, "status.replicas: -1: must be >= 0"),
        (
            _job(phase=JobPhase.SUCCEEDED),
            6,
            "status.replicas: 6: job default/gobigger has finished (Succeeded)",
        ),
    ],
)
def test_a_total_the_job_may_not_take_is_refused_naming_why(
    job: ElasticJob, total: int, problem: str
) -> None:
    change = replicas_for_total(job, COUNTS, total)
    assert (change.replicas, change.problem) == ({}, problem)


@pytest.mark.parametrize("total", [100, 2])
def test_a_total_beyond_the_types_bounds_is_refused_naming_the_bound(total: int) -> None:
    change = replicas_for_total(_job(), COUNTS, total)
    assert change.replicas == {}
    assert change.problem is not None
    wanted = 1 + total - 3
    assert change.problem.startswith(
        f"status.replicas: {total}: job default/gobigger: learner replicas would be {wanted}, "
    )
