"""The pre-flight verdict: a node fails when a rank's check raised or it is far slower."""

from hypothesis import given
from hypothesis import strategies as st

from flexjob.core.training.preflight import PREFLIGHT_RATIO, CheckResult, failed_nodes


def timed(**seconds: float) -> list[CheckResult]:
    """One passed check per node, taking that node's ``seconds``."""
    return [CheckResult(node, took) for node, took in seconds.items()]


def test_a_healthy_world_passes() -> None:
    results = [CheckResult("a", 0.010), CheckResult("b", 0.012), CheckResult("c", 0.011)]
    assert failed_nodes(results) == {}


def test_a_rank_whose_check_raised_fails_its_node() -> None:
    results = [
        CheckResult("a", 0.01),
        CheckResult("b", 0.01),
        CheckResult("b", 0.0, "RuntimeError: no device"),
    ]
    assert failed_nodes(results) == {"b": "pre-flight check failed: RuntimeError: no device"}


def test_a_node_far_slower_than_the_others_fails() -> None:
    results = [CheckResult("a", 0.01), CheckResult("b", 0.01), CheckResult("c", 0.05)]
    assert failed_nodes(results) == {
        "c": "pre-flight check took 0.050 s, 5.0x the other nodes' median 0.010 s"
    }


def test_a_node_counts_its_slowest_rank() -> None:
    results = [*timed(a=0.01, b=0.01), *timed(a=0.01, b=0.04)]  # two ranks on each node
    assert set(failed_nodes(results)) == {"b"}


def test_slower_but_within_the_ratio_passes() -> None:
    results = [CheckResult("a", 0.01), CheckResult("b", 0.01 * PREFLIGHT_RATIO)]
    assert failed_nodes(results) == {}


def test_one_node_fails_only_by_an_error() -> None:
    assert failed_nodes([CheckResult("a", 9.0)]) == {}
    assert set(failed_nodes([CheckResult("a", 0.0, "boom")])) == {"a"}


results = st.lists(
    st.builds(
        CheckResult,
        st.sampled_from("abcde"),
        st.floats(0.001, 10.0),
        st.sampled_from(["", "", "", "boom"]),
    ),
    max_size=12,
)


@given(results)
def test_every_node_with_an_error_fails_and_the_fastest_healthy_one_never_for_speed(
    rs: list[CheckResult],
) -> None:
    failed = failed_nodes(rs)
    assert {r.node for r in rs if r.error} <= set(failed)
    assert set(failed) <= {r.node for r in rs}
    slowest: dict[str, float] = {}
    for r in rs:
        slowest[r.node] = max(slowest.get(r.node, 0.0), r.seconds)
    fastest = min(slowest, key=slowest.__getitem__, default=None)
    if fastest is not None and not any(r.error for r in rs if r.node == fastest):
        assert fastest not in failed


def test_worst_first_errors_then_the_slowest() -> None:
    results = [
        *timed(a=0.01, b=0.01, c=0.01, d=0.01, s=0.05, t=0.09),
        CheckResult("z", 0.0, "boom"),
        CheckResult("y", 0.0, "boom"),
    ]
    assert list(failed_nodes(results)) == ["y", "z", "t", "s"]
