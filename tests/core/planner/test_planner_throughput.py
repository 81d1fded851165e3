from flexjob.core.planner import JobLimits, SpeedSample, ThroughputConfig, plan_worker_count
from flexjob.core.planner.throughput import find_knee, throughput_curve
from tests.brain import recorded

DATA = recorded.load("throughput_knee")
SAMPLES = recorded.speed_samples(DATA)
LIMITS = JobLimits(**DATA["limits"])


def _measured_up_to(size: int) -> list[SpeedSample]:
    return [s for s in SAMPLES if s.world_size <= size]


def test_workers_are_added_while_each_added_worker_still_pays() -> None:
    for size in range(1, DATA["knee"]):
        assert plan_worker_count(_measured_up_to(size), size, LIMITS) == size + 1


def test_one_more_worker_is_tried_at_the_knee_before_the_curve_shows_it() -> None:
    knee = DATA["knee"]
    assert plan_worker_count(_measured_up_to(knee), knee, LIMITS) == knee + 1


def test_a_worker_past_the_knee_is_removed() -> None:
    knee = DATA["knee"]
    assert plan_worker_count(_measured_up_to(knee + 1), knee + 1, LIMITS) == knee


def test_adding_workers_stops_at_the_knee() -> None:
    knee = DATA["knee"]
    assert plan_worker_count(_measured_up_to(knee + 1), knee, LIMITS) is None
    assert plan_worker_count(SAMPLES, knee, LIMITS) is None


def test_the_whole_curve_sends_a_bigger_job_back_to_the_knee() -> None:
    assert plan_worker_count(SAMPLES, 6, LIMITS) == DATA["knee"]


def test_no_decision_until_the_current_size_has_enough_samples() -> None:
    partial = _measured_up_to(2) + [s for s in SAMPLES if s.world_size == 3][:2]
    assert plan_worker_count(partial, 3, LIMITS) is None


def test_warm_up_samples_are_left_out_of_the_curve() -> None:
    curve = throughput_curve(SAMPLES, ThroughputConfig())
    first = [s.samples_per_second for s in SAMPLES if s.world_size == 1]
    assert curve[0].samples_per_second > min(first)
    assert [p.world_size for p in curve] == [1, 2, 3, 4, 5, 6]


def test_knee_is_found_on_the_recorded_curve() -> None:
    assert find_knee(throughput_curve(SAMPLES, ThroughputConfig()), ThroughputConfig()) == (
        DATA["knee"],
        True,
    )


def test_the_job_limit_caps_growth() -> None:
    capped = JobLimits(min_replicas=1, max_replicas=3)
    assert plan_worker_count(_measured_up_to(3), 3, capped) is None


def test_a_stricter_threshold_moves_the_knee_down() -> None:
    strict = ThroughputConfig(min_marginal_ratio=0.85)
    assert plan_worker_count(SAMPLES, 4, LIMITS, strict) == 3
