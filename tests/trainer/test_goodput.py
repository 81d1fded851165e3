"""The trainer's goodput estimate against a synthetic job whose curve is known."""

import json
import random

import numpy as np
import pytest

from flexjob.api import names
from flexjob.core.allocator import GoodputModel, ThroughputParams
from flexjob.scheduler.profilings import goodput_model
from flexjob.trainer.batch import Step
from flexjob.trainer.goodput import GoodputReporter, NoiseScaleMeter, ThroughputMeter
from flexjob.trainer.world import WorldInfo

TRUE = ThroughputParams(
    alpha=0.04,
    beta=0.0015,
    sync_local=0.015,
    sync_local_per_replica=0.002,
    sync_remote=0.06,
    sync_remote_per_replica=0.004,
)
TRUE_NOISE = 900.0
SHAPES = [(1, 1), (1, 2), (1, 4), (2, 8), (4, 16)]


def _world(nodes: int, replicas: int) -> WorldInfo:
    return WorldInfo(0, replicas, 0, replicas // nodes, 0, nodes, 1, "n0", None)


def test_measured_step_times_give_the_known_speedup_curve() -> None:
    rng = random.Random(5)
    clock = [0.0]
    published: list[tuple[str, str]] = []
    reporter = GoodputReporter(
        32.0, lambda k, v: published.append((k, v)), publish_every_s=1.0, clock=lambda: clock[0]
    )
    # Gradient norms of a job with |G|^2 = 1 and tr(Sigma) = TRUE_NOISE, at batches 32 and 256.
    reporter.noise.observe(32, 1 + TRUE_NOISE / 32, 256, 1 + TRUE_NOISE / 256)
    for nodes, replicas in SHAPES:  # the job is resized through these shapes
        reporter.reformed(_world(nodes, replicas))
        for number in range(40):
            clock[0] += TRUE.step_time(nodes, replicas, 32.0) * rng.uniform(0.97, 1.03)
            reporter.stepped(Step(number, [], 0, 32 * replicas, replicas))
    key, value = published[-1]
    assert key == names.KV_PROFILINGS
    fitted = goodput_model(json.loads(value))  # what the Allocator builds from the profilings
    truth = GoodputModel(TRUE, 32.0, TRUE_NOISE)
    for nodes, replicas in [*SHAPES, (2, 6), (8, 32)]:
        assert fitted.speedup(nodes, replicas) == pytest.approx(
            truth.speedup(nodes, replicas), rel=0.05
        )


def test_the_first_step_of_a_new_world_and_warmup_steps_are_not_measured() -> None:
    meter = ThroughputMeter(warmup=2)
    for seconds in (9.0, 9.0, 1.0, 1.0):
        meter.record(1, 2, 32.0, seconds)
    assert [s.step_time for s in meter.samples()] == [1.0]
    clock = [0.0]
    reporter = GoodputReporter(32.0, None, clock=lambda: clock[0])
    reporter.reformed(_world(1, 2))
    clock[0] = 100.0  # forming the world took long: not a step time
    reporter.stepped(Step(0, [], 0, 64, 2))
    assert reporter.meter._seen == {}


def test_noise_scale_from_local_and_all_reduced_gradient_norms() -> None:
    rng = np.random.default_rng(0)
    dim, sigma = 400, 1.0
    true_grad = rng.normal(0.0, 1.0, dim) * np.sqrt(dim * sigma**2 / TRUE_NOISE / dim)
    truth = dim * sigma**2 / float(true_grad @ true_grad)
    meter = NoiseScaleMeter(smoothing=0.98)
    local, replicas = 16, 8
    for _ in range(600):
        per_replica = [
            true_grad + rng.normal(0.0, sigma / np.sqrt(local), dim) for _ in range(replicas)
        ]
        mean = np.mean(per_replica, axis=0)
        meter.observe(
            local, float(per_replica[0] @ per_replica[0]), local * replicas, float(mean @ mean)
        )
    assert meter.noise_scale == pytest.approx(truth, rel=0.15)


def test_no_noise_scale_until_the_estimates_make_sense() -> None:
    meter = NoiseScaleMeter()
    assert meter.noise_scale is None
    meter.observe(32, 1.0, 32, 1.0)  # same batch twice: nothing to learn
    assert meter.noise_scale is None
