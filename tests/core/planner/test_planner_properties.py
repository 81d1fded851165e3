"""Properties of the planner over generated throughput curves."""

from hypothesis import given, settings
from hypothesis import strategies as st

from flexjob.api import ResourcePlan, ResourceSpec
from flexjob.core.planner import JobLimits, SpeedSample, ThroughputConfig, merge, plan_worker_count
from flexjob.core.planner.throughput import CurvePoint, find_knee

# Diminishing returns: each added worker brings a fraction (shrinking) of the previous one's gain.
curves = st.lists(st.floats(0.05, 1.0), min_size=12, max_size=12).map(
    lambda decays: [100.0 * d for d in _cumulative(decays)]
)


def _cumulative(decays: list[float]) -> list[float]:
    gains, gain = [1.0], 1.0
    for d in decays:
        gain *= d
        gains.append(gain)
    total, out = 0.0, []
    for g in gains:
        total += g
        out.append(total)
    return out


def _samples(speed: float, size: int, t0: float) -> list[SpeedSample]:
    return [SpeedSample(t0 + i, 0, speed, size) for i in range(4)]


@settings(max_examples=60, deadline=None)
@given(curve=curves, max_replicas=st.integers(1, 12))
def test_growth_settles_at_the_knee_and_never_passes_the_limit(
    curve: list[float], max_replicas: int
) -> None:
    limits = JobLimits(max_replicas=max_replicas)
    samples: list[SpeedSample] = []
    workers, seen = 1, [1]
    for _ in range(30):
        samples += _samples(curve[workers - 1], workers, 10.0 * len(samples))
        target = plan_worker_count(samples, workers, limits)
        if target is None:
            break
        workers = target
        seen.append(workers)
    assert max(seen) <= max_replicas
    knee, _ = find_knee([CurvePoint(n, s) for n, s in enumerate(curve, 1)], ThroughputConfig())
    assert workers == min(knee, max_replicas)


def test_merge_keeps_every_node_change() -> None:
    cpu = ResourcePlan(node_resources={"ps-0": ResourceSpec(cpu=3.0)}, reason="hot")
    mem = ResourcePlan(node_resources={"ps-0": ResourceSpec(memory=6144)}, reason="oom")
    merged = merge("job", [cpu, mem])
    assert merged.node_resources["ps-0"] == ResourceSpec(cpu=3.0, memory=6144)
    assert merged.reason == "hot; oom"
