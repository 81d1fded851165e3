"""``spec.priority`` orders placement: when the cluster fits one of two jobs, the one of higher
priority runs even if it is younger, with every builtin policy."""

import pytest

from flexjob.core.allocator import BUILTIN_POLICIES, JobInfo, NodeInfo, Resources, schedule_round

from .strategies import gpu_job

NODES = [NodeInfo("n0", Resources(gpu=4, cpu=32, memory=64_000))]


def _job(job_id: str, *, priority: int, age: float, preemptible: bool) -> JobInfo:
    return gpu_job(job_id, 4, 4, 4, preemptible=preemptible, age=age, priority=priority)


# (case, priority of the young job, the job that runs)
CASES = [("young-high-first", 1, "young"), ("equal-oldest-first", 0, "old")]


@pytest.mark.parametrize(
    ("young_priority", "winner"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.parametrize("preemptible", [False, True], ids=["fixed", "preemptible"])
@pytest.mark.parametrize("name", sorted(BUILTIN_POLICIES))
def test_priority_then_age_decides_who_runs(
    name: str, preemptible: bool, young_priority: int, winner: str
) -> None:
    old = _job("old", priority=0, age=600.0, preemptible=preemptible)
    young = _job("young", priority=young_priority, age=1.0, preemptible=preemptible)
    got = schedule_round(BUILTIN_POLICIES[name](), [young, old], NODES, {}, optimize=True)
    loser = "old" if winner == "young" else "young"
    assert (got.get(winner), got.get(loser) or []) == (["n0"] * 4, [])
