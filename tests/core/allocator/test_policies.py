import time
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flexjob.core.allocator import (
    BUILTIN_POLICIES,
    GoodputModel,
    GoodputPolicy,
    JobInfo,
    NodeInfo,
    PackPolicy,
    Policy,
    Resources,
    StaticPolicy,
    ThroughputParams,
    schedule_round,
)
from flexjob.core.allocator.placement import FreeMap, check_allocations

from .strategies import GPU, free_nodes, gpu_job, job_lists, node_lists


@pytest.mark.parametrize("name", sorted(BUILTIN_POLICIES))
@settings(max_examples=60, deadline=None)
@given(nodes=node_lists, jobs=job_lists(), seed_prev=st.integers(0, 3))
def test_allocations_never_exceed_node_capacity(
    name: str, nodes: list[NodeInfo], jobs: list[JobInfo], seed_prev: int
) -> None:
    policy: Policy = BUILTIN_POLICIES[name]()
    first = schedule_round(policy, jobs, nodes, {}, optimize=False)
    check_allocations(jobs, nodes, first)
    second = schedule_round(policy, jobs, nodes, first, optimize=True)
    check_allocations(jobs, nodes, second)
    for job in jobs:
        assert len(second.get(job.id, [])) in (0, *range(job.min_replicas, job.max_replicas + 1))


@pytest.mark.parametrize("name", sorted(BUILTIN_POLICIES))
@settings(max_examples=60, deadline=None)
@given(nodes=node_lists, jobs=job_lists())
def test_non_preemptible_jobs_never_move(
    name: str, nodes: list[NodeInfo], jobs: list[JobInfo]
) -> None:
    policy: Policy = BUILTIN_POLICIES[name]()
    first = schedule_round(policy, jobs, nodes, {}, optimize=False)
    aged = [replace(j, age=j.age + 600) for j in jobs]
    second = schedule_round(policy, aged, nodes, first, optimize=True)
    for job in jobs:
        if not job.preemptible:
            assert len(first[job.id]) in (0, job.replicas)
            if first[job.id]:
                assert second[job.id] == first[job.id]


def test_static_gives_each_job_its_requested_replicas_first_fit() -> None:
    got = StaticPolicy().allocate(gpu_job("a", 6), free_nodes())
    assert got == ["n0"] * 4 + ["n1"] * 2


def test_static_job_waits_when_its_full_request_does_not_fit() -> None:
    assert StaticPolicy().allocate(gpu_job("a", 20, hi=20), free_nodes()) == []


def test_pack_uses_the_fewest_nodes() -> None:
    nodes = [
        NodeInfo("a", Resources(gpu=1)),
        NodeInfo("b", Resources(gpu=3)),
        NodeInfo("c", Resources(gpu=4)),
    ]
    assert PackPolicy().allocate(gpu_job("x", 3), nodes) == ["b"] * 3
    assert sorted(set(PackPolicy().allocate(gpu_job("x", 7), nodes))) == ["b", "c"]


def test_goodput_shrinks_a_poorly_scaling_job_to_make_room_for_a_new_one() -> None:
    poor = GoodputModel(ThroughputParams(sync_local=0.2, sync_remote=1.0), noise_scale=50.0)
    old = gpu_job("old", 16, hi=16, age=3600.0, speedup=poor.speedup)
    new = gpu_job("new", 4, hi=16, age=0.0)
    previous = {"old": ["n0"] * 4 + ["n1"] * 4 + ["n2"] * 4 + ["n3"] * 4}
    got = GoodputPolicy().optimize([old, new], free_nodes(), previous)
    assert 0 < len(got["old"]) < 16
    assert len(got["new"]) >= 4


def test_goodput_keeps_an_old_job_in_place_when_the_gain_is_small() -> None:
    model = GoodputModel(ThroughputParams(), noise_scale=2000.0)
    job = gpu_job("a", 4, hi=5, age=60.0, restarts=3, speedup=model.speedup)
    previous = {"a": ["n0"] * 4}
    got = GoodputPolicy(restart_delay=60.0).optimize([job], free_nodes(1, 5), previous)
    assert got["a"] == ["n0"] * 4


def test_goodput_respects_min_replicas_or_leaves_the_job_waiting() -> None:
    job = gpu_job("big", 8, lo=8, hi=8)
    assert GoodputPolicy().allocate(job, free_nodes(1, 4)) == []
    assert len(GoodputPolicy().allocate(job, free_nodes(2, 4))) == 8


def test_goodput_optimize_for_160_jobs_on_16_nodes_takes_well_under_a_second() -> None:
    nodes = free_nodes(16, 4)
    models = [
        GoodputModel(ThroughputParams(sync_remote=0.01 * (i % 7)), noise_scale=100.0 * (1 + i % 9))
        for i in range(160)
    ]
    jobs = [
        gpu_job(f"j{i}", 1 + i % 4, lo=1, hi=8, age=float(i * 30), speedup=m.speedup)
        for i, m in enumerate(models)
    ]
    previous = StaticPolicy().optimize(jobs, nodes, {})
    start = time.process_time()
    got = GoodputPolicy().optimize(jobs, nodes, previous)
    elapsed = time.process_time() - start
    check_allocations(jobs, nodes, got)
    print(f"goodput optimize, 160 jobs x 16 nodes x 4 GPUs: {elapsed * 1000:.1f} ms")
    assert elapsed < 1.0


def test_free_map_fits_counts_replicas_per_node() -> None:
    free = FreeMap(free_nodes(1, 2))
    assert free.fits(["n0", "n0"], GPU)
    assert not free.fits(["n0", "n0", "n0"], GPU)


def test_a_job_whose_node_left_is_placed_afresh() -> None:
    job = gpu_job("a", 2, preemptible=False)
    got = schedule_round(
        StaticPolicy(), [job], free_nodes(2), {"a": ["gone", "gone"]}, optimize=False
    )
    assert got["a"] == ["n0", "n0"]


@pytest.mark.parametrize("name", sorted(BUILTIN_POLICIES))
@settings(max_examples=30, deadline=None)
@given(nodes=node_lists, jobs=job_lists(), data=st.data())
def test_over_many_rounds_fixed_jobs_stay_put_and_nodes_are_never_overcommitted(
    name: str, nodes: list[NodeInfo], jobs: list[JobInfo], data: st.DataObject
) -> None:
    policy: Policy = BUILTIN_POLICIES[name]()
    current: dict[str, list[str]] = {}
    placed_fixed: dict[str, list[str]] = {}
    active: list[JobInfo] = []
    for job in jobs:  # one arrival per round, a random job may finish, optimize at random
        active.append(job)
        if data.draw(st.booleans(), label="finish one"):
            gone = active.pop(data.draw(st.integers(0, len(active) - 1), label="which"))
            current.pop(gone.id, None)
            placed_fixed.pop(gone.id, None)
        optimize = data.draw(st.booleans(), label="optimize")
        current = {
            k: v
            for k, v in schedule_round(policy, active, nodes, current, optimize=optimize).items()
            if v
        }
        check_allocations(active, nodes, current)
        for job in active:
            if not job.preemptible and job.id in placed_fixed:
                assert current[job.id] == placed_fixed[job.id]
            elif not job.preemptible and job.id in current:
                placed_fixed[job.id] = current[job.id]
