from flexjob.core.planner.speed import SpeedAggregator


def test_a_sample_waits_for_every_node_of_the_world() -> None:
    agg = SpeedAggregator()
    agg.observe("w0", 2, 100.0, 5, now=1.0)
    assert agg.take(now=1.0) is None
    agg.observe("w1", 2, 110.0, 6, now=2.0)
    sample = agg.take(now=2.0)
    assert sample is not None
    assert (sample.samples_per_second, sample.world_size, sample.step) == (210.0, 2, 6)


def test_reports_from_the_old_world_are_not_mixed_in() -> None:
    agg = SpeedAggregator()
    agg.observe("w0", 2, 100.0, 1, now=1.0)
    agg.observe("w1", 3, 90.0, 1, now=1.0)  # already in the new world of 3
    assert agg.take(now=1.0) is None
    agg.observe("w0", 3, 90.0, 2, now=2.0)
    agg.observe("w2", 3, 90.0, 2, now=2.0)
    sample = agg.take(now=2.0)
    assert sample is not None and (sample.samples_per_second, sample.world_size) == (270.0, 3)


def test_a_node_that_left_stops_counting_once_stale() -> None:
    agg = SpeedAggregator(stale_after=5.0)
    agg.observe("w2", 3, 90.0, 1, now=0.0)  # last words of a removed node
    agg.observe("w0", 2, 100.0, 1, now=1.0)
    agg.observe("w1", 2, 100.0, 1, now=1.0)
    assert agg.take(now=1.0) is None
    agg.observe("w0", 2, 100.0, 2, now=6.0)
    agg.observe("w1", 2, 100.0, 2, now=6.0)
    sample = agg.take(now=6.0)
    assert sample is not None and sample.world_size == 2


def test_each_report_counts_in_one_sample_only() -> None:
    agg = SpeedAggregator()
    agg.observe("w0", 1, 100.0, 1, now=1.0)
    assert agg.take(now=1.0) is not None
    assert agg.take(now=2.0) is None
