"""Speedup curves kept across rounds: extended, renewed with the model, never different."""

from dataclasses import replace

from flexjob.core.allocator import GoodputModel, ThroughputParams
from flexjob.core.allocator.speedup_cache import SpeedupCache

from .strategies import gpu_job

MODEL = GoodputModel(ThroughputParams(sync_remote=0.2), 32.0, 500.0, 1024.0, 128.0)


class Counting:
    """A speedup callable (not a model's method) that counts its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def __call__(self, num_nodes: int, num_replicas: int) -> float:
        self.calls.append((num_nodes, num_replicas))
        return MODEL.speedup(num_nodes, num_replicas)


def test_a_longer_curve_is_extended_by_the_counts_it_lacks() -> None:
    fn = Counting()
    job = gpu_job("a", 1, speedup=fn)
    cache = SpeedupCache()
    cache.curves([(job, 4, 3, None)])
    curve = cache.curves([(job, 4, 6, None)])["a"]
    assert fn.calls == [(1, 1), (1, 2), (1, 3), (1, 4), (2, 5), (2, 6)]
    assert curve.curve == [0.0] + [MODEL.speedup(k, n) for k, n in fn.calls]


def test_a_new_speedup_function_gets_a_new_curve_and_an_equal_model_keeps_its_own() -> None:
    cache = SpeedupCache()
    first = cache.curves([(gpu_job("a", 1, speedup=MODEL.speedup), 4, 8, None)])["a"]
    same = replace(MODEL)  # another object, equal by value: the live Allocator's every round
    again = cache.curves([(gpu_job("a", 1, speedup=same.speedup), 4, 8, None)])["a"]
    assert again is first
    grown = replace(MODEL, noise_scale=5000.0)
    renewed = cache.curves([(gpu_job("a", 1, speedup=grown.speedup), 4, 8, None)])["a"]
    assert renewed is not first
    assert renewed.curve[1:] == [grown.speedup(-(-n // 4), n) for n in range(1, 9)]
    assert renewed.curve != first.curve


def test_a_shape_off_the_fewest_nodes_is_computed_with_the_curve_and_equals_speedup() -> None:
    cache = SpeedupCache()
    curve = cache.curves([(gpu_job("a", 1, speedup=MODEL.speedup), 4, 4, (3, 3))])["a"]
    assert curve.points == {(3, 3): MODEL.speedup(3, 3)}
    assert curve.at(3, 3) == MODEL.speedup(3, 3) < curve.at(1, 3) == MODEL.speedup(1, 3)
    assert curve.at(4, 8) == MODEL.speedup(4, 8)  # beyond the curve: asked for, then kept
    assert (4, 8) in curve.points


def test_jobs_gone_are_forgotten() -> None:
    cache = SpeedupCache()
    first = cache.curves([(gpu_job("a", 1, speedup=MODEL.speedup), 4, 4, None)])["a"]
    cache.retain(["b"])
    assert cache.curves([(gpu_job("a", 1, speedup=MODEL.speedup), 4, 4, None)])["a"] is not first
