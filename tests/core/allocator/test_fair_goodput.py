"""The ``goodput`` policy: p-norm objective, exact sizing, restart cost, attained-service order."""

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flexjob.core.allocator import (
    FairGoodputPolicy,
    GoodputModel,
    JobInfo,
    NodeInfo,
    Resources,
    ThroughputParams,
    schedule_round,
)
from flexjob.core.allocator.fair_goodput import idle_utility, utility
from flexjob.core.allocator.placement import check_allocations, num_nodes

from .strategies import free_nodes, gpu_job, job_lists, node_lists


def _job(
    job_id: str,
    model: GoodputModel,
    lo: int = 1,
    hi: int = 16,
    replicas: int | None = None,
    **kw: Any,
) -> JobInfo:
    """``gpu_job`` sped up by ``model``, asking ``lo`` replicas unless told."""
    asked = lo if replicas is None else replicas
    return gpu_job(job_id, asked, lo, hi, speedup=model.speedup, **kw)


GOOD = GoodputModel(ThroughputParams(sync_local=0.0, sync_local_per_replica=0.0, sync_remote=0.0,
                                     sync_remote_per_replica=0.0))  # fmt: skip
POOR = GoodputModel(ThroughputParams(sync_local=0.02, sync_remote=0.5), noise_scale=200.0)


def _objective(policy: FairGoodputPolicy, jobs: list[JobInfo], counts: dict[str, int]) -> float:
    total = 0.0
    for job in jobs:
        n = counts.get(job.id, 0)
        s = job.speedup(1, n) if n else 0.0
        total += utility(s, policy.p) if s > 0 else idle_utility(policy.p)
    return total


@settings(max_examples=40, deadline=None)
@given(
    p=st.sampled_from([-2.0, -1.0, 0.0, 0.5, 1.0]),
    gpus=st.integers(1, 10),
    shapes=st.lists(
        st.tuples(
            st.floats(0.0, 0.3), st.floats(10.0, 2000.0), st.integers(1, 2), st.integers(2, 6)
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_sizing_is_optimal_against_brute_force(
    p: float, gpus: int, shapes: list[tuple[float, float, int, int]]
) -> None:
    # One node big enough for everything: sizing alone decides, placement cannot spoil it.
    jobs = [
        _job(f"j{i}", GoodputModel(ThroughputParams(sync_local=sync), noise_scale=phi), lo, hi)
        for i, (sync, phi, lo, hi) in enumerate(shapes)
    ]
    policy = FairGoodputPolicy(p=p)
    got = policy.optimize(jobs, [NodeInfo("n0", Resources(gpu=gpus))], {})
    counts = {k: len(v) for k, v in got.items()}
    best = -float("inf")
    for combo in itertools.product(
        *[[0, *range(j.min_replicas, j.max_replicas + 1)] for j in jobs]
    ):
        if sum(combo) > gpus:
            continue
        # Admission: every job that fits at its least count must run (least-served first).
        trial = dict(zip([j.id for j in jobs], combo, strict=True))
        if any(trial[j.id] == 0 and counts[j.id] > 0 for j in jobs):
            continue
        if any(trial[j.id] > 0 and counts[j.id] == 0 for j in jobs):
            continue
        best = max(best, _objective(policy, jobs, trial))
    assert _objective(policy, jobs, counts) == pytest.approx(best, rel=1e-9, abs=1e-12)


def test_fairness_gives_the_poor_scaler_more_than_total_speedup_does() -> None:
    jobs = [_job("good", GOOD), _job("poor", POOR)]
    fair = FairGoodputPolicy(p=-1.0).optimize(jobs, free_nodes(1, 8), {})
    total = FairGoodputPolicy(p=1.0).optimize(jobs, free_nodes(1, 8), {})
    assert len(fair["poor"]) > len(total["poor"]) >= 1
    assert len(fair["good"]) + len(fair["poor"]) == 8


class _Weighted(FairGoodputPolicy):
    def weight(self, job: JobInfo) -> float:
        return 4.0 if job.id == "heavy" else 1.0


def test_a_job_weighed_higher_gets_more_of_the_gpus() -> None:
    # Two identical jobs share 8 GPUs evenly; weighing one 4x moves GPUs to it, none overcommitted.
    jobs = [_job("heavy", POOR), _job("light", POOR)]
    even = FairGoodputPolicy().optimize(jobs, free_nodes(1, 8), {})
    weighed = _Weighted().optimize(jobs, free_nodes(1, 8), {})
    assert len(even["heavy"]) == len(even["light"])
    assert len(weighed["heavy"]) > len(weighed["light"]) >= 1
    assert len(weighed["heavy"]) + len(weighed["light"]) <= 8


@settings(max_examples=40, deadline=None)
@given(
    prev=st.integers(1, 6),
    age=st.floats(0.0, 20_000.0),
    restarts=st.integers(0, 20),
    sync=st.floats(0.0, 0.2),
    phi=st.floats(20.0, 5000.0),
)
def test_a_lone_job_is_resized_only_when_the_gain_pays_back_its_restart(
    prev: int, age: float, restarts: int, sync: float, phi: float
) -> None:
    model = GoodputModel(ThroughputParams(sync_local=sync), noise_scale=phi)
    job = _job("a", model, 1, 8, age=age, restarts=restarts)
    policy = FairGoodputPolicy()
    previous = {"a": ["n0"] * prev}
    got = policy.optimize([job], free_nodes(1, 8), previous)["a"]
    if len(got) != prev:
        factor = policy.resize_factor(job)
        assert factor == pytest.approx(1.0 - policy.restart_delay / max(age, policy.min_horizon))
        assert model.speedup(1, len(got)) * factor > model.speedup(1, prev)
    else:
        assert got == previous["a"]  # kept, on the same node


@settings(max_examples=30, deadline=None)
@given(nodes=node_lists, jobs=job_lists())
def test_a_second_round_with_nothing_changed_moves_nothing(
    nodes: list[NodeInfo], jobs: list[JobInfo]
) -> None:
    policy = FairGoodputPolicy()
    first = schedule_round(policy, jobs, nodes, {}, optimize=True)
    check_allocations(jobs, nodes, first)
    second = schedule_round(policy, jobs, nodes, first, optimize=True)
    check_allocations(jobs, nodes, second)
    for job in jobs:
        if first.get(job.id) and second.get(job.id):
            assert second[job.id] == first[job.id] or len(second[job.id]) != len(first[job.id])
    resized = [j for j in jobs if first.get(j.id) and len(second.get(j.id, [])) != len(first[j.id])]
    for job in resized:  # only a job whose restart pays for itself is resized
        n, m = len(first[job.id]), len(second[job.id])
        if m:
            factor = policy.resize_factor(job)
            gain = job.speedup(num_nodes(second[job.id]), m) * factor
            assert gain > job.speedup(num_nodes(first[job.id]), n) or m < n


def test_a_job_bigger_than_a_node_gets_whole_nodes() -> None:
    # Three perfect scalers on 4 nodes x 4 GPUs: 6/5/5 would score higher, but 5 and 6 replicas
    # spill onto a second node; whole nodes give 8/4/4, and nobody waits.
    jobs = [_job(f"j{i}", GOOD) for i in range(3)]
    got = FairGoodputPolicy().optimize(jobs, free_nodes(4, 4), {})
    assert sorted(len(v) for v in got.values()) == [4, 4, 8]
    assert all(num_nodes(v) == len(v) // 4 for v in got.values())
    # A job already running at a count past a node keeps it (no restart just to align): at
    # most 7, it may not take both nodes whole, and 4 would be slower.
    running = {"j0": ["n0"] * 4 + ["n1"] * 2}
    kept = FairGoodputPolicy().optimize(
        [_job("j0", GOOD, 1, 7, age=600.0)], free_nodes(2, 4), running
    )
    assert kept["j0"] == running["j0"]


def test_a_resize_is_charged_only_the_time_its_restart_costs() -> None:
    policy = FairGoodputPolicy()
    previous = {"big": ["n0"] * 4 + ["n1"] * 4 + ["n2"] * 4}  # 12 of 16 GPUs, 4 idle
    young = JobInfo("young", 1, 1, 1, True, Resources(cpu=1.0), age=60.0)  # no GPU: no rival
    # An hour old, 16/12 = 1.33x faster: 30 s pays back within the hour, arrivals or not, and
    # however often it restarted before.
    for restarts in (0, 60):
        big = _job("big", GOOD, 1, 16, age=3600.0, restarts=restarts)
        assert len(policy.optimize([big, young], free_nodes(4, 4), previous)["big"]) == 16
    # A job whose horizon is a few minutes does not restart for a gain under 30 s in it.
    near = {"near": ["n0"] * 12}
    slight = GoodputModel(ThroughputParams(sync_local=0.0, sync_local_per_replica=0.0))
    fresh = _job("near", slight, 1, 13, age=10.0)
    assert policy.resize_factor(fresh) == pytest.approx(0.9)  # 30 s of the 300 s horizon
    assert fresh.speedup(1, 13) * 0.9 < fresh.speedup(1, 12)
    assert policy.optimize([fresh], free_nodes(1, 16), near)["near"] == near["near"]


def test_least_attained_service_is_admitted_first_and_a_peer_does_not_preempt() -> None:
    served = _job("served", GOOD, 4, 4, age=5000.0, attained=20_000.0)
    fresh = _job("fresh", GOOD, 4, 4, age=10.0, attained=0.0)
    got = FairGoodputPolicy().optimize([served, fresh], free_nodes(1, 4), {"served": ["n0"] * 4})
    assert got["fresh"] == ["n0"] * 4 and got["served"] == []
    # Same level: the running job keeps its place.
    peer = _job("peer", GOOD, 4, 4, age=10.0, attained=100.0)
    running = _job("running", GOOD, 4, 4, age=50.0, attained=200.0)
    got = FairGoodputPolicy().optimize([peer, running], free_nodes(1, 4), {"running": ["n0"] * 4})
    assert got["running"] == ["n0"] * 4 and got["peer"] == []


def test_an_arrival_gets_free_gpus_and_nobody_restarts_for_it() -> None:
    policy = FairGoodputPolicy()
    big = _job("big", GOOD, 1, 16, age=3600.0)
    first = schedule_round(
        policy, [big], free_nodes(2, 4), {"big": ["n0"] * 4 + ["n1"] * 2}, optimize=False
    )
    new = _job("new", GOOD, 1, 8, replicas=4)
    second = schedule_round(policy, [big, new], free_nodes(2, 4), first, optimize=False)
    assert second["big"] == first["big"]
    assert second["new"] == ["n1", "n1"]  # its request (4) shrunk to the free room
    full = schedule_round(
        policy, [big, new], free_nodes(2, 4), {"big": ["n0"] * 4 + ["n1"] * 4}, optimize=False
    )
    assert full["new"] == [] and len(full["big"]) == 8


def test_an_arrival_starts_at_the_best_speedup_the_free_gpus_hold() -> None:
    policy = FairGoodputPolicy()
    cluster = free_nodes(2, 4)
    # Scales without limit: it takes every free GPU, although it asked for one.
    assert len(policy.allocate(_job("good", GOOD, 1, 16, replicas=1), cluster)) == 8
    # Crossing nodes costs more than it gains: the best count fits on one node.
    poor = _job("poor", POOR, 1, 16, replicas=1)
    got = policy.allocate(poor, cluster)
    best = max(range(1, 9), key=lambda n: POOR.speedup(-(-n // 4), n))
    assert len(got) == best and num_nodes(got) == 1
    # Never below its request while that fits; a job that needs no GPU gets its request.
    asks_four = _job("asks", POOR, 1, 16, replicas=4)
    assert len(policy.allocate(asks_four, cluster)) >= 4
    cpu_only = JobInfo("cpu", 2, 1, 8, True, Resources(cpu=1.0))
    assert len(policy.allocate(cpu_only, cluster)) == 2


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ({"p": 2.0}, "p must be in"),
        ({"min_horizon": 0.0}, "min_horizon"),
        ({"thresholds": (10.0, 5.0)}, "thresholds"),
    ],
    ids=["p", "min_horizon", "thresholds"],
)
def test_a_bad_setting_is_refused_naming_the_parameter(
    setting: dict[str, object], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        FairGoodputPolicy(**setting)  # type: ignore[arg-type]
