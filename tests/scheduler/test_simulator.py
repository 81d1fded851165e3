import gc
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from flexjob.core.allocator import (
    Allocations,
    FairGoodputPolicy,
    GoodputPolicy,
    JobInfo,
    NodeInfo,
    SpeedupFn,
    StaticPolicy,
    TiresiasPolicy,
)
from flexjob.core.allocator.contract import Previous
from flexjob.scheduler.measured import measured_trace
from flexjob.scheduler.simulator import ClusterConfig, percentile, simulate
from flexjob.scheduler.trace import TraceJob, read_trace
from flexjob.scheduler.workloads import pollux_trace

SHIPPED = Path(__file__).resolve().parents[2] / "examples" / "traces" / "synthetic.csv"


def _job(job_id: str, work: float, replicas: int = 1, submit: float = 0.0) -> TraceJob:
    return TraceJob(
        id=job_id,
        submit_time=submit,
        work=work,
        replicas=replicas,
        max_replicas=8,
        sync_local=0,
        sync_local_per_replica=0,
        sync_remote=0,
        sync_remote_per_replica=0,
    )


def test_goodput_beats_static_on_average_jct_of_the_shipped_trace() -> None:
    trace = read_trace(SHIPPED)
    static = simulate(trace, StaticPolicy())
    goodput = simulate(trace, GoodputPolicy())
    assert not static.unfinished and not goodput.unfinished
    assert goodput.avg_jct < 0.9 * static.avg_jct


def test_a_lone_job_finishes_after_its_work_divided_by_its_speedup_plus_the_start_delay() -> None:
    job = _job("a", work=3600.0, replicas=2)
    result = simulate([job], StaticPolicy(), ClusterConfig(nodes=1, gpus_per_node=4))
    expected = 30.0 + 3600.0 / job.model().speedup(1, 2)
    assert result.jct["a"] == pytest.approx(expected, rel=1e-6)


def test_a_first_start_pays_the_start_delay_when_it_is_set() -> None:
    job = _job("a", work=3600.0, replicas=2)
    cluster = ClusterConfig(nodes=1, gpus_per_node=4, restart_delay=30.0, start_delay=5.0)
    result = simulate([job], StaticPolicy(), cluster)
    assert result.jct["a"] == pytest.approx(5.0 + 3600.0 / job.model().speedup(1, 2), rel=1e-6)


def test_a_job_waits_in_static_until_its_request_fits() -> None:
    trace = [_job("big", 600.0, replicas=4), _job("next", 600.0, replicas=4, submit=1.0)]
    result = simulate(trace, StaticPolicy(), ClusterConfig(nodes=1, gpus_per_node=4))
    assert result.jct["next"] > result.jct["big"]


def test_reallocation_pays_the_restart_delay() -> None:
    trace = [_job("a", 20_000.0), _job("b", 20_000.0, submit=3000.0)]
    cluster = ClusterConfig(nodes=1, gpus_per_node=4)
    result = simulate(trace, GoodputPolicy(), cluster)
    assert result.restarts >= 1


def test_gpu_utilisation_is_a_fraction_of_the_cluster() -> None:
    result = simulate(read_trace(SHIPPED), GoodputPolicy())
    assert 0.0 < result.gpu_utilisation <= 1.0


def test_percentile_interpolates_between_ranks() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50.0) == 3.0
    assert percentile([0.0, 10.0], 99.0) == pytest.approx(9.9)


def test_a_resume_after_a_preemption_counts_as_a_restart() -> None:
    # One GPU: "long" passes the first service level (1 GPU-hour) before "short" arrives, so
    # Tiresias preempts it for "short" and resumes it when "short" is done.
    trace = [_job("long", 6000.0), _job("short", 600.0, submit=4000.0)]
    result = simulate(trace, TiresiasPolicy(), ClusterConfig(nodes=1, gpus_per_node=1))
    assert not result.unfinished
    assert result.jct["short"] < 1000.0
    assert result.restarts == 1


def test_observe_sees_the_work_each_job_has_left_before_each_round() -> None:
    seen: list[dict[str, float]] = []
    job = _job("a", work=3600.0, replicas=2)
    result = simulate(
        [job],
        StaticPolicy(),
        ClusterConfig(nodes=1, gpus_per_node=4),
        observe=lambda r: seen.append(dict(r)),
    )
    left = [s["a"] for s in seen]
    assert left[0] == 3600.0
    assert left == sorted(left, reverse=True) and left[-1] < 3600.0
    rate = job.model().speedup(1, 2)
    # Rounds run every 60 s; the first 30 s of the job are its start delay.
    assert left[1] == pytest.approx(3600.0 - rate * 30.0)
    assert result.jct["a"] == pytest.approx(30.0 + 3600.0 / rate)


def test_a_period_shorter_than_a_tick_is_refused_naming_both() -> None:
    with pytest.raises(ValueError, match=r"period must be >= tick \(30s\).*got 10"):
        ClusterConfig(period=10.0)
    assert ClusterConfig(tick=10.0, period=10.0).period == 10.0


def test_per_tick_records_split_a_lone_jobs_time_into_starting_and_training() -> None:
    job = _job("a", work=3600.0, replicas=2)
    records = []
    cluster = ClusterConfig(nodes=1, gpus_per_node=4)
    result = simulate([job], StaticPolicy(), cluster, on_tick=records.append)
    starting = sum(r.starting.get("a", 0.0) for r in records)
    training = sum(cluster.tick - r.starting.get("a", 0.0) for r in records if "a" in r.placed)
    assert starting == pytest.approx(30.0)
    # The last tick is counted whole: the job ends within it.
    assert result.jct["a"] <= starting + training < result.jct["a"] + cluster.tick
    assert all(r.idle_gpus == 2 and not r.waiting for r in records)
    assert records[0].optimized and records[0].placed["a"][0] == 2


class _Recorded(FairGoodputPolicy):
    """``goodput`` recording every re-plan; ``pointwise``: each job's speedup wrapped in a plain
    function, so the policy evaluates it one point at a time (as before curves were batched)."""

    def __init__(self, pointwise: bool) -> None:
        super().__init__()
        self.pointwise = pointwise
        self.rounds: list[list[tuple[str, list[str]]]] = []
        self.calls = 0

    def _wrap(self, fn: SpeedupFn) -> SpeedupFn:
        def pointwise(num_nodes: int, num_replicas: int) -> float:
            self.calls += 1
            return fn(num_nodes, num_replicas)

        return pointwise

    def optimize(
        self, jobs: Sequence[JobInfo], nodes: Sequence[NodeInfo], previous: Previous
    ) -> Allocations:
        if self.pointwise:
            jobs = [replace(job, speedup=self._wrap(job.speedup)) for job in jobs]
        planned = super().optimize(jobs, nodes, previous)
        self.rounds.append(sorted(planned.items()))
        return planned


@pytest.mark.parametrize(
    "make,seed",
    [(pollux_trace, 0), (pollux_trace, 1), (measured_trace, 100), (measured_trace, 101)],
)
def test_batched_speedup_curves_decide_every_round_as_pointwise_calls_do(
    make: Callable[..., list[TraceJob]], seed: int
) -> None:
    trace = make(50, seed=seed, hours=2.0)
    cluster = ClusterConfig(nodes=6)
    batched, pointwise = _Recorded(pointwise=False), _Recorded(pointwise=True)
    first = simulate(trace, batched, cluster)
    second = simulate(trace, pointwise, cluster)
    assert pointwise.calls > 0 and len(batched.rounds) > 50
    assert batched.rounds == pointwise.rounds
    assert first.jct == second.jct and first.restarts == second.restarts > 0


class _Collecting(StaticPolicy):
    """``static``, whose every re-plan runs a full garbage collection over a large heap."""

    def __init__(self) -> None:
        self.heap = [[i] for i in range(300_000)]

    def optimize(
        self, jobs: Sequence[JobInfo], nodes: Sequence[NodeInfo], previous: Previous
    ) -> Allocations:
        gc.collect()
        return super().optimize(jobs, nodes, previous)


def test_a_garbage_collection_inside_a_round_is_counted_apart_from_the_policys_time() -> None:
    result = simulate([_job("a", work=600.0)], _Collecting())
    assert len(result.decision_gc) == len(result.decision_times) > 0
    assert min(result.decision_gc) > 0.001  # a full pass over 300,000 lists
    assert max(result.decision_times) < min(result.decision_gc)
    assert result.decision_gc_max_ms == 1000 * max(result.decision_gc)
