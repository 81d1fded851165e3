"""The straggler rule: a member slower than ratio x the others' median for a whole window."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flexjob.core.training.stragglers import (
    Straggler,
    StragglerConfig,
    StragglerWatch,
    slower_than_others,
    to_exclude,
)

CFG = StragglerConfig(ratio=2.0, window_s=10.0, min_reports=3)


def feed(watch: StragglerWatch, times: dict[str, float], start: float, seconds: float,
         round_: int = 1, every: float = 1.0) -> float:  # fmt: skip
    """Every node reports its time once per ``every`` seconds for ``seconds``; the end time."""
    t = start
    while t <= start + seconds:
        for node, s in times.items():
            watch.observe(node, round_, s, t)
        t += every
    return t - every


def test_a_node_slow_for_a_whole_window_is_a_straggler() -> None:
    w = StragglerWatch(CFG)
    end = feed(w, {"a": 0.1, "b": 0.1, "c": 0.5}, 0.0, 10.0)
    assert w.stragglers(["a", "b", "c"], 1, end) == [Straggler("c", 0.5, 0.1)]


def test_not_before_the_window_is_covered() -> None:
    w = StragglerWatch(CFG)
    end = feed(w, {"a": 0.1, "b": 0.1, "c": 0.5}, 0.0, 9.0)
    assert w.stragglers(["a", "b", "c"], 1, end) == []
    assert [s.node for s in w.stragglers(["a", "b", "c"], 1, end + 1.0)] == ["c"]


def test_one_slow_step_is_no_straggler() -> None:
    w = StragglerWatch(CFG)
    for t in range(11):
        w.observe("a", 1, 0.1, t)
        w.observe("b", 1, 5.0 if t == 4 else 0.1, t)
    assert w.stragglers(["a", "b"], 1, 10.0) == []


def test_too_few_reports_in_the_window() -> None:
    w = StragglerWatch(StragglerConfig(window_s=10.0, min_reports=5))
    end = feed(w, {"a": 0.1, "c": 0.5}, 0.0, 10.0, every=5.0)  # 3 reports each
    assert w.stragglers(["a", "c"], 1, end) == []


def test_a_world_change_starts_the_window_again() -> None:
    w = StragglerWatch(CFG)
    feed(w, {"a": 0.1, "b": 0.1, "c": 0.5}, 0.0, 10.0)
    end = feed(w, {"a": 0.1, "b": 0.1, "c": 0.5}, 11.0, 5.0, round_=2)
    assert w.stragglers(["a", "b", "c"], 2, end) == []
    assert w.stragglers(["a", "b", "c"], 1, end) == []  # round 1's windows are gone
    end = feed(w, {"a": 0.1, "b": 0.1, "c": 0.5}, end + 1.0, 5.0, round_=2)
    assert [s.node for s in w.stragglers(["a", "b", "c"], 2, end)] == ["c"]


def test_only_members_count_and_a_forgotten_node_is_none() -> None:
    w = StragglerWatch(CFG)
    end = feed(w, {"a": 0.1, "b": 0.1, "c": 0.5}, 0.0, 10.0)
    assert w.stragglers(["a", "b"], 1, end) == []
    w.forget("c")
    assert w.stragglers(["a", "b", "c"], 1, end) == []


def test_old_reports_leave_the_window() -> None:
    """A node that was slow and is fast now is no straggler once the slow reports aged out."""
    w = StragglerWatch(CFG)
    feed(w, {"a": 0.1, "b": 0.1, "c": 0.5}, 0.0, 10.0)
    end = feed(w, {"a": 0.1, "b": 0.1, "c": 0.1}, 11.0, 10.0)
    assert w.stragglers(["a", "b", "c"], 1, end) == []


def test_a_node_that_never_measured_a_step_is_skipped() -> None:
    w = StragglerWatch(CFG)
    end = feed(w, {"a": 0.1, "b": 0.0, "c": 0.5}, 0.0, 10.0)
    # b reports nothing measurable: c is compared with a alone
    assert [s.node for s in w.stragglers(["a", "b", "c"], 1, end)] == ["c"]


def test_two_nodes_the_slow_one_is_found() -> None:
    assert [s.node for s in slower_than_others({"a": 1.0, "b": 2.5}, 2.0)] == ["b"]
    assert slower_than_others({"a": 1.0, "b": 2.0}, 2.0) == []  # not more than 2x


def test_one_node_alone_is_never_a_straggler() -> None:
    assert slower_than_others({"a": 9.0}, 2.0) == []
    assert slower_than_others({}, 2.0) == []


def test_slowest_first() -> None:
    found = slower_than_others({"a": 1.0, "b": 1.0, "c": 1.0, "d": 3.0, "e": 5.0}, 2.0)
    assert [s.node for s in found] == ["e", "d"]
    assert found[0].times_slower == 5.0


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("ratio", 1.0, r"straggler ratio \(--straggler-ratio\) must be > 1"),
        ("window_s", 0.0, r"straggler window \(--straggler-window\) must be > 0"),
        ("min_reports", 0, "straggler min_reports must be >= 1"),
    ],
)
def test_bad_config_names_the_field(field: str, value: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StragglerConfig(**{field: value})  # type: ignore[arg-type]


times = st.dictionaries(
    st.sampled_from("abcdefg"), st.floats(0.001, 100.0, allow_nan=False), max_size=7
)


@given(times, st.floats(1.01, 10.0))
def test_a_straggler_is_over_ratio_times_the_others_median(
    seconds: dict[str, float], ratio: float
) -> None:
    found = {s.node: s for s in slower_than_others(seconds, ratio)}
    for node, own in seconds.items():
        others = sorted(s for n, s in seconds.items() if n != node)
        if not others:
            assert node not in found
            continue
        k = len(others)
        median = (others[(k - 1) // 2] + others[k // 2]) / 2
        assert (node in found) == (own > ratio * median)


@given(times, st.floats(1.01, 10.0))
def test_never_everyone_is_a_straggler(seconds: dict[str, float], ratio: float) -> None:
    found = slower_than_others(seconds, ratio)
    assert len(found) < max(len(seconds), 1)
    fastest = min(seconds, key=seconds.__getitem__, default=None)
    assert fastest not in {s.node for s in found}


@given(times.filter(lambda d: len(d) >= 2), st.floats(1.01, 10.0), st.floats(0.1, 9.9))
def test_the_watch_agrees_with_the_rule_on_a_steady_world(
    seconds: dict[str, float], ratio: float, short: float
) -> None:
    w = StragglerWatch(StragglerConfig(ratio=ratio, window_s=10.0, min_reports=3))
    end = feed(w, seconds, 0.0, 10.0)
    assert w.stragglers(seconds, 1, end) == slower_than_others(seconds, ratio)
    early = StragglerWatch(StragglerConfig(ratio=ratio, window_s=10.0, min_reports=3))
    assert early.stragglers(seconds, 1, feed(early, seconds, 0.0, short)) == []


def test_exclusion_keeps_the_world_at_its_minimum() -> None:
    found = [s.node for s in slower_than_others({"a": 1, "b": 1, "c": 1, "d": 3, "e": 5}, 2.0)]
    assert to_exclude(found, members=5, min_nodes=1) == ["e", "d"]
    assert to_exclude(found, members=5, min_nodes=4) == ["e"]  # the slowest first
    assert to_exclude(found, members=5, min_nodes=5) == []
    assert to_exclude([], members=5, min_nodes=1) == []
