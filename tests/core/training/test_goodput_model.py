import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flexjob.core.training.goodput_model import (
    GoodputModel,
    StepSample,
    ThroughputParams,
    fit_throughput,
    model_of,
    speedups,
)

TRUE = ThroughputParams(
    alpha=0.1,
    beta=0.002,
    sync_local=0.02,
    sync_local_per_replica=0.003,
    sync_remote=0.05,
    sync_remote_per_replica=0.01,
)


def _samples(params: ThroughputParams) -> list[StepSample]:
    shapes = [(1, 1), (1, 2), (1, 4), (2, 4), (2, 8), (4, 16), (1, 3)]
    return [StepSample(k, n, b, params.step_time(k, n, b)) for k, n in shapes for b in (16.0, 64.0)]


def test_fit_recovers_the_step_time_model_from_exact_samples() -> None:
    fitted = fit_throughput(_samples(TRUE))
    for k, n in [(1, 6), (3, 12), (8, 32)]:
        assert fitted.step_time(k, n, 32.0) == pytest.approx(TRUE.step_time(k, n, 32.0), rel=1e-6)


def test_fit_keeps_the_prior_for_terms_single_replica_samples_cannot_tell() -> None:
    prior = ThroughputParams(sync_remote=0.7)
    fitted = fit_throughput([StepSample(1, 1, 32.0, 0.2)], prior)
    assert fitted.sync_remote == 0.7
    assert fitted.step_time(1, 1, 32.0) == pytest.approx(0.2)


def test_fit_of_one_batch_size_keeps_the_priors_split_between_alpha_and_beta() -> None:
    prior = ThroughputParams(alpha=0.05, beta=0.001)  # 32 samples: 0.05 s fixed, 0.032 s
    fitted = fit_throughput([StepSample(1, 1, 32.0, 0.164)], prior)  # twice the prior's
    assert fitted.step_time(1, 1, 32.0) == pytest.approx(0.164)
    assert fitted.alpha > 0.05 and fitted.beta > 0.001  # both grow: neither takes it all
    assert fitted.beta / fitted.alpha == pytest.approx(0.001 / 0.05, rel=0.25)


def test_fit_never_returns_negative_terms() -> None:
    noisy = [StepSample(1, n, 32.0, 0.3 - 0.01 * n) for n in (1, 2, 3, 4)]
    fitted = fit_throughput(noisy)
    assert all(v >= 0 for v in (fitted.alpha, fitted.beta, fitted.sync_local_per_replica))


def test_speedup_of_one_replica_is_one_and_of_none_is_zero() -> None:
    model = GoodputModel(TRUE, noise_scale=500.0)
    assert model.speedup(1, 1) == pytest.approx(1.0)
    assert model.speedup(1, 0) == 0.0


def test_statistical_efficiency_makes_speedup_sublinear() -> None:
    free_comm = GoodputModel(ThroughputParams(sync_local=0, sync_local_per_replica=0), 32.0, 100.0)
    assert free_comm.speedup(1, 8) < 8 * 0.5


def test_spreading_over_more_nodes_is_slower() -> None:
    model = GoodputModel(TRUE)
    assert model.speedup(2, 8) < model.speedup(1, 8)


def test_adaptive_batch_never_does_much_worse_than_the_fixed_batch_and_helps_at_scale() -> None:
    params = ThroughputParams(alpha=0.05, beta=0.0005, sync_remote=0.08)
    fixed = GoodputModel(params, local_batch=32.0, noise_scale=3000.0)
    adaptive = GoodputModel(params, 32.0, 3000.0, max_batch=4096.0, max_local_batch=512.0)
    assert adaptive.speedup(1, 1) >= 1.0 - 1e-9
    for k, n in [(1, 1), (1, 4), (2, 8), (4, 16), (8, 32)]:
        assert adaptive.speedup(k, n) >= 0.98 * fixed.speedup(k, n)
    assert adaptive.speedup(8, 32) > 1.2 * fixed.speedup(8, 32)
    assert 32.0 / 32 <= adaptive.local_batch_for(8, 32) <= 4096.0 / 32


def test_without_max_batch_the_local_batch_is_fixed_on_every_shape() -> None:
    model = GoodputModel(TRUE, local_batch=64.0, noise_scale=500.0)
    assert not model.adaptive
    assert {model.local_batch_for(k, n) for k, n in [(1, 1), (2, 8), (4, 16)]} == {64.0}
    assert model.efficiency(4) == pytest.approx((500.0 + 64.0) / (500.0 + 256.0))


_term = st.one_of(st.just(0.0), st.floats(1e-6, 0.5), st.floats(1e-7, 1e-3))
_models = st.builds(
    lambda terms, local, phi, global_x, local_x: GoodputModel(
        ThroughputParams(*terms),
        local,
        phi,
        None if global_x is None else local * global_x,
        None if local_x is None else local * local_x,
    ),
    st.tuples(*[_term] * 6),
    st.sampled_from([1.0, 8.0, 12.0, 32.0, 256.0]),
    st.one_of(st.none(), st.just(0.0), st.floats(1.0, 1e5)),
    st.one_of(st.none(), st.just(1.0), st.floats(1.0, 300.0)),
    st.one_of(st.none(), st.floats(0.5, 16.0)),
)
_shapes = st.lists(st.tuples(st.integers(0, 17), st.integers(0, 70)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_models, _shapes), max_size=6))
def test_many_speedups_at_once_equal_each_speedup_bit_for_bit(
    requests: list[tuple[GoodputModel, list[tuple[int, int]]]],
) -> None:
    got = speedups([(m, [k for k, _ in s], [n for _, n in s]) for m, s in requests])
    want = [[m.speedup(k, n) for k, n in s] for m, s in requests]
    assert got == want  # float equality: the same bits, so a policy decides the same


def test_a_models_speedup_method_gives_its_model_and_other_callables_none() -> None:
    model = GoodputModel(TRUE)
    assert model_of(model.speedup) is model
    assert model_of(lambda k, n: model.speedup(k, n)) is None
    assert model_of(model.goodput) is None


def test_a_job_far_faster_than_the_prior_keeps_its_split_and_a_bigger_batch_still_costs() -> None:
    prior = ThroughputParams(alpha=0.05, beta=0.001)  # 256 samples: 0.306 s
    fitted = fit_throughput([StepSample(1, 1, 256.0, 0.0072)], prior)  # an NCF step: 1/42
    assert fitted.step_time(1, 1, 256.0) == pytest.approx(0.0072)
    assert fitted.beta / fitted.alpha == pytest.approx(0.001 / 0.05, rel=0.05)
    assert fitted.step_time(1, 1, 4096.0) > 10 * fitted.step_time(1, 1, 256.0)
    # so its adaptive batch stays near what it measured: a bigger batch is not free
    model = GoodputModel(fitted, 256.0, 2500.0, max_batch=16384.0, max_local_batch=4096.0)
    assert model.local_batch_for(1, 1) < 1024.0
