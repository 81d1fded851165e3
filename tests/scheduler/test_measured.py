"""The measured job-model family: the shape of its models, and the workload it generates."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flexjob.scheduler.measured import (
    BURST_SPREAD,
    CHECKPOINT_MB_PER_S,
    RESTART_BASE,
    RESTART_PER_NODE,
    TYPES,
    JobType,
    measured_trace,
)
from flexjob.scheduler.sim_jobs import SimJob, true_step_time
from flexjob.scheduler.trace import TraceJob, synthetic_job

from .day_trace import day_of_jobs

types = st.sampled_from(TYPES)


def _job(kind: JobType, noise_growth: float | None = None) -> TraceJob:
    return synthetic_job(
        kind.name,
        0,
        0.0,
        3600.0,
        1,
        64,
        kind.sync_terms(),
        local_batch=kind.b0,
        noise_scale=kind.phi0,
        alpha=kind.alpha_c,
        beta=kind.beta_c,
        max_batch=kind.max_batch,
        max_local_batch=kind.max_local_batch,
        gamma=kind.gamma,
        noise_growth=kind.phi1 / kind.phi0 if noise_growth is None else noise_growth,
    )


def _throughput(kind: JobType, nodes: int, replicas: int, batch: float) -> float:
    params = _job(kind).params()
    return replicas * batch / true_step_time(params, kind.gamma, nodes, replicas, batch)


@settings(max_examples=60, deadline=None)
@given(types, st.integers(1, 16), st.integers(0, 63), st.integers(1, 63), st.floats(1.0, 1024.0))
def test_throughput_grows_with_replicas_on_the_same_nodes_and_saturates(
    kind: JobType, nodes: int, start: int, extra: int, batch: float
) -> None:
    room = 4 * nodes  # 4 GPUs a node; more than one node means at least one replica each
    n = min(max(nodes, 1 + start), room - 1) if room > 1 else 1
    more = min(n + extra, room)
    if more <= n:
        return
    slow, fast = _throughput(kind, nodes, n, batch), _throughput(kind, nodes, more, batch)
    assert fast >= slow - 1e-9
    # Saturating: each added replica adds less, and the total stays under b / beta.
    assert fast / more <= slow / n + 1e-9
    assert fast <= batch / (kind.beta_n if nodes > 1 else kind.beta_r) + 1e-9


@settings(max_examples=60, deadline=None)
@given(types, st.floats(0.0, 1.0), st.floats(1.0, 64.0))
def test_efficiency_is_in_zero_one_and_falls_with_the_batch(
    kind: JobType, progress: float, scale: float
) -> None:
    view = SimJob(_job(kind)).view(progress)
    m = kind.b0 * scale
    e = view.efficiency_of(m)
    assert 0.0 < e <= 1.0
    assert view.efficiency_of(kind.b0) == pytest.approx(1.0)
    assert view.efficiency_of(m * 2) < e


@settings(max_examples=40, deadline=None)
@given(types, st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_the_noise_scale_grows_from_its_start_to_its_end_as_training_progresses(
    kind: JobType, a: float, b: float
) -> None:
    job = SimJob(_job(kind))
    lo, hi = sorted((a, b))
    early, late = job.noise_scale(lo), job.noise_scale(hi)
    assert early is not None and late is not None
    assert kind.phi0 - 1e-6 <= early <= late <= kind.phi1 + 1e-6
    assert job.noise_scale(0.0) == pytest.approx(kind.phi0)
    assert job.noise_scale(1.0) == pytest.approx(kind.phi1)


def test_a_late_job_scales_further_than_an_early_one_of_the_same_type() -> None:
    for kind in TYPES:
        job = SimJob(_job(kind))
        assert job.rate(4, 16, 0.99) >= job.rate(4, 16, 0.0), kind.name
    cifar = SimJob(_job(TYPES[0]))
    assert cifar.rate(4, 16, 0.99) > 1.5 * cifar.rate(4, 16, 0.0)


def test_the_reported_model_is_fitted_close_to_the_true_step_times() -> None:
    for kind in TYPES:
        job = SimJob(_job(kind))
        for k, n in ((1, 1), (1, 4), (4, 16)):
            b = kind.b0
            truth = true_step_time(job.job.params(), kind.gamma, k, n, b)
            reported = job.params().step_time(k, n, b)
            assert reported == pytest.approx(truth, rel=0.5), (kind.name, k, n)


def test_a_row_without_the_new_columns_runs_exactly_at_its_goodput_model() -> None:
    job = _job(TYPES[0]).model_copy(update={"gamma": 1.0, "noise_growth": 1.0})
    sim = SimJob(job)
    for k, n in ((1, 1), (1, 3), (2, 8), (16, 64)):
        assert sim.rate(k, n, 0.7) == job.model().speedup(k, n)
    assert sim.view(0.9) == job.model()
    assert sim.restart_delay(3, 30.0) == 30.0


def test_restarts_cost_more_for_bigger_checkpoints_and_more_nodes() -> None:
    jobs = {j.id.split("-")[0]: SimJob(j) for j in measured_trace(seed=100)}
    bert, cifar = jobs["bert"], jobs["cifar10"]
    assert bert.restart_delay(1, 30.0) > cifar.restart_delay(1, 30.0)
    assert cifar.restart_delay(4, 30.0) == cifar.restart_delay(1, 30.0) + 3 * RESTART_PER_NODE
    mb = next(t.checkpoint_mb for t in TYPES if t.name == "cifar10")
    assert cifar.restart_delay(1, 30.0) == pytest.approx(
        RESTART_BASE + mb / CHECKPOINT_MB_PER_S + RESTART_PER_NODE
    )


def test_the_workload_has_160_jobs_of_six_types_with_bursts_over_eight_hours() -> None:
    jobs, _ = day_of_jobs(lambda: measured_trace(seed=101), {t.name for t in TYPES})
    # A burst: at least 3 jobs of one type submitted within BURST_SPREAD seconds.
    by_type: dict[str, list[float]] = {}
    for j in jobs:
        by_type.setdefault(j.id.split("-")[0], []).append(j.submit_time)
    assert any(t[i + 2] - t[i] <= BURST_SPREAD for t in by_type.values() for i in range(len(t) - 2))


def test_every_type_maps_onto_the_trace_form_without_a_negative_term() -> None:
    for kind in TYPES:
        assert min(kind.sync_terms()) >= 0.0, kind.name
        # The trace form equals Pollux's: alpha_n + beta_n * (n - 2) across nodes.
        params = _job(kind).params()
        n = 10
        sync = params.step_time(3, n, 1.0) - params.alpha - params.beta
        assert sync == pytest.approx(kind.alpha_n + kind.beta_n * (n - 2))


def test_a_learned_job_reports_the_prior_until_it_runs_and_then_its_measured_shapes() -> None:
    job = _job(TYPES[2]).model_copy(update={"learned": True})  # BERT: dear across nodes
    sim = SimJob(job)
    prior = sim.view().speedup(2, 8)
    sim.ran(1, 1)
    sim.ran(1, 4)
    before = sim.view().speedup(2, 8)
    sim.ran(2, 8)  # now it has measured its network all-reduce
    after = sim.view().speedup(2, 8)
    assert sim.view() != SimJob(job).view()
    assert after == pytest.approx(sim.rate(2, 8), rel=0.25)
    assert abs(after - sim.rate(2, 8)) < abs(before - sim.rate(2, 8))
    assert prior != before
