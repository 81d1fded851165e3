"""Asking for a size by hand: finished jobs and counts outside min/maxReplicas are refused."""

import pytest

from flexjob.api import ElasticJob, ElasticJobStatus, JobPhase, ReplicaType
from flexjob.core.operator.scale_bounds import bound_problem, finished_problem
from tests.core.operator.reconcile_sim import make_job


def bounded_job() -> ElasticJob:
    job = make_job(workers=2)
    spec = job.spec.replica_specs[ReplicaType.WORKER]
    spec.min_replicas, spec.max_replicas = 1, 3
    return job


@pytest.mark.parametrize(
    ("wanted", "problem"),
    [(1, None), (3, None), (0, "below minReplicas 1"), (10, "above maxReplicas 3")],
)
def test_counts_outside_the_bounds_are_refused_naming_the_bound(
    wanted: int, problem: str | None
) -> None:
    found = bound_problem(bounded_job(), ReplicaType.WORKER, wanted)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_a_type_the_job_does_not_have_is_refused_naming_the_types() -> None:
    found = bound_problem(bounded_job(), ReplicaType.PS, 1)
    assert found is not None and "no ps replicas" in found and "worker" in found


@pytest.mark.parametrize(
    ("phase", "refused"),
    [(JobPhase.RUNNING, False), (JobPhase.SUCCEEDED, True), (JobPhase.FAILED, True)],
)
def test_finished_jobs_cannot_be_scaled(phase: JobPhase, refused: bool) -> None:
    job = bounded_job()
    job.status = ElasticJobStatus(phase=phase)
    found = finished_problem(job)
    assert (found is not None and phase.value in found) if refused else found is None
