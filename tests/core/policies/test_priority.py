"""``spec.priority`` orders placement: when the cluster fits one of two jobs, the one of higher
priority runs even if it is younger, with every builtin policy."""

import pytest

from flexjob.core.policies import BUILTIN_POLICIES, JobInfo, NodeInfo, Resources, schedule_round

GPU = Resources(gpu=1)
NODES = [NodeInfo("n0", Resources(gpu=4, cpu=32, memory=64_000))]


def _job(job_id: str, *, priority: int, age: float, preemptible: bool) -> JobInfo:
    return JobInfo(
        id=job_id,
        replicas=4,
        min_replicas=4,
        max_replicas=4,
        preemptible=preemptible,
        resources=GPU,
        age=age,
        priority=priority,
    )


@pytest.mark.parametrize("preemptible", [False, True], ids=["fixed", "preemptible"])
@pytest.mark.parametrize("name", sorted(BUILTIN_POLICIES))
def test_higher_priority_job_is_placed_before_an_older_one(name: str, preemptible: bool) -> None:
    old = _job("old-normal", priority=0, age=600.0, preemptible=preemptible)
    new = _job("new-high", priority=1, age=1.0, preemptible=preemptible)
    got = schedule_round(BUILTIN_POLICIES[name](), [old, new], NODES, {}, optimize=True)
    assert (got.get("new-high"), got.get("old-normal") or []) == (["n0"] * 4, [])


@pytest.mark.parametrize("preemptible", [False, True], ids=["fixed", "preemptible"])
@pytest.mark.parametrize("name", sorted(BUILTIN_POLICIES))
def test_equal_priority_keeps_oldest_first(name: str, preemptible: bool) -> None:
    old = _job("old", priority=0, age=600.0, preemptible=preemptible)
    new = _job("new", priority=0, age=1.0, preemptible=preemptible)
    got = schedule_round(BUILTIN_POLICIES[name](), [new, old], NODES, {}, optimize=True)
    assert (got.get("old"), got.get("new") or []) == (["n0"] * 4, [])
