"""Cluster-aware plans: never more than is free, and DRF between jobs asking together."""

from hypothesis import given
from hypothesis import strategies as st

from flexjob.api import ReplicaType
from flexjob.api.scaleplan import ReplicaResourceSpec, ResourcePlan
from flexjob.core.allocator.contract import Resources
from flexjob.core.planner import ReplicaResources
from flexjob.core.planner.capacity import (
    Ask,
    dominant_share,
    fit_plan,
    free_capacity,
    plan_asks,
    share,
)

W = ReplicaType.WORKER


def test_free_capacity_sums_what_each_node_has_left_never_below_zero() -> None:
    nodes = [
        (Resources(0, 8.0, 16384), Resources(0, 6.0, 4096)),
        (Resources(0, 4.0, 8192), Resources(0, 5.0, 9000)),  # over-committed: counts as 0
    ]
    assert free_capacity(nodes) == Resources(0, 2.0, 12288)


def test_the_drf_paper_example() -> None:
    """9 CPUs and 18 GB; A's tasks need <1 CPU, 4 GB>, B's <3 CPU, 1 GB>: DRF runs 3 of A's and
    2 of B's (both end at a dominant share of 2/3)."""
    a = Ask("a", W, Resources(0, 1.0, 4096), 10)
    b = Ask("b", W, Resources(0, 3.0, 1024), 10)
    assert share([a, b], Resources(0, 9.0, 18432)) == {a: 3, b: 2}


def test_what_a_job_holds_counts_in_its_dominant_share() -> None:
    """Room for one replica: the job that holds less gets it, whoever asked first."""
    big = Ask("big", W, Resources(0, 1.0, 1024), 1, held=Resources(0, 2.0, 2048))
    small = Ask("small", W, Resources(0, 1.0, 1024), 1, held=Resources(0, 1.0, 1024))
    total = Resources(0, 4.0, 4096)
    assert share([big, small], Resources(0, 1.0, 1024), total) == {big: 0, small: 1}


def test_a_job_alone_gets_what_fits_up_to_its_ask() -> None:
    ask = Ask("a", W, Resources(0, 2.0, 1024), 5)
    assert share([ask], Resources(0, 7.0, 100_000)) == {ask: 3}
    assert share([ask], Resources(0, 100.0, 100_000)) == {ask: 5}


def test_dominant_share_ignores_resources_the_cluster_has_none_of() -> None:
    assert dominant_share(Resources(1, 2.0, 512), Resources(0, 8.0, 1024)) == 0.5


RES = st.builds(
    Resources,
    st.just(0),
    st.floats(0.0, 4.0).map(lambda x: round(x, 2)),
    st.integers(0, 4096),
)
ASKS = st.lists(
    st.builds(
        Ask,
        st.sampled_from("abc"),
        st.sampled_from([W, ReplicaType.PS]),
        RES,
        st.integers(0, 6),
        RES,
    ),
    max_size=5,
    unique_by=lambda a: (a.job, a.replica_type),
)


@given(ASKS, RES)
def test_grants_fit_in_what_is_free_and_leave_no_open_ask_that_would_fit(
    asks: list[Ask], free: Resources
) -> None:
    grants = share(asks, free)
    used = Resources()
    for ask, count in grants.items():
        assert 0 <= count <= ask.count
        used += ask.each.times(count)
    assert used.fits_in(free)
    left = free - used
    assert not any(g < a.count and a.each.fits_in(left) for a, g in grants.items())


def plan(workers: int, cpu: float | None = None) -> ResourcePlan:
    spec = ReplicaResourceSpec.model_validate({"replicas": workers, "resource": {"cpu": cpu}})
    return ResourcePlan(job="j", replica_resources={W: spec}, reason="throughput")


def test_plan_asks_name_only_growth_with_the_replicas_resources() -> None:
    current = {W: ReplicaResources(2, 1.0, 2048.0), ReplicaType.PS: ReplicaResources(1, 2.0, 1024)}
    [ask] = plan_asks("j", plan(5), current)
    assert (ask.replica_type, ask.count, ask.each) == (W, 3, Resources(0, 1.0, 2048))
    assert ask.held == Resources(0, 4.0, 5120)
    assert plan_asks("j", plan(1), current) == []
    [bigger] = plan_asks("j", plan(3, cpu=2.0), current)
    assert bigger.each == Resources(0, 2.0, 2048)


def test_fit_plan_cuts_growth_to_the_grant_and_says_why() -> None:
    current = {W: ReplicaResources(2, 1.0, 2048.0)}
    cut = fit_plan(plan(5), current, {W: 1}, Resources(0, 1.0, 4096))
    assert cut.replica_resources[W].replicas == 3
    assert cut.reason == "throughput; worker 5 -> 3: cluster capacity (free cpu 1, memory 4096 MiB)"
    assert fit_plan(plan(5), current, {W: 3}, Resources(0, 9.0, 9999)) == plan(5)
    nothing = fit_plan(plan(5), current, {W: 0}, Resources())
    assert nothing.empty
