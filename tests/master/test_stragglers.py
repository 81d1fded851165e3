"""The master's straggler watch: reported once per world, excluded under the option, kept out
after a master restart; a fake clock drives the window."""

import logging
from pathlib import Path

import pytest

from flexjob.api.enums import StragglerPolicy
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.service import MasterService
from flexjob.observe import timeline
from flexjob.rpc.messages import NodeRef, NodeStats
from tests.core.clock import FakeClock
from tests.master.test_service import A, B, C, form_world, make


def slow_c_for(svc: MasterService, clock: FakeClock, seconds: float) -> None:
    """Every node reports once a second; c's own step takes 5x the others'."""
    for _ in range(int(seconds) + 1):
        for node, own in ((A, 0.1), (B, 0.1), (C, 0.5)):
            svc.report_stats(node, NodeStats(step=1, world_size=3, step_seconds=own))
            svc.heartbeat(node, 0)
        svc.check()
        clock.advance(1.0)


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The records the test logs at INFO and above (the timeline's events)."""
    caplog.set_level(logging.INFO)
    return caplog


def watched(
    tmp_path: Path,
    clock: FakeClock,
    policy: StragglerPolicy = StragglerPolicy.REPORT,
    **kw: object,
) -> MasterService:
    """A master with a 5 s straggler window under ``policy``, its world of a, b and c formed."""
    svc = make(tmp_path, clock, slow_nodes__window_s=5.0, slow_nodes__policy=policy, **kw)
    form_world(svc, A, B, C)
    return svc


def straggling(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if f"event={timeline.STRAGGLING}" in r.message]


def test_a_slow_node_is_reported_once_and_stays_in_the_world(
    tmp_path: Path, logs: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    svc = watched(tmp_path, clock)
    slow_c_for(svc, clock, 4.0)
    assert straggling(logs) == []  # not a whole window yet
    slow_c_for(svc, clock, 4.0)
    [line] = straggling(logs)
    assert "node=c" in line and "action=reported" in line and "times_slower=5.0" in line
    assert svc.get_world(C, 1).complete
    assert not svc.heartbeat(C, 0).excluded


def test_excluded_node_leaves_the_world_and_is_kept_out(
    tmp_path: Path, logs: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    svc = watched(tmp_path, clock, StragglerPolicy.EXCLUDE)
    slow_c_for(svc, clock, 6.0)
    [line] = straggling(logs)
    assert "action=excluded" in line
    assert svc.heartbeat(C, 0).excluded and not svc.heartbeat(A, 0).excluded
    assert svc.nodes_waiting(A).num_nodes_waiting >= 1  # the others re-form
    form_world(svc, A, B)
    world = svc.get_world(A, 2)
    assert world.complete and world.members == ("a", "b")
    svc.join(C, "c:1", 1)  # it asks again: never let in
    assert not svc.get_world(C, 3).complete
    clock.advance(2.0)
    svc.check()
    assert svc.get_world(A, 2).members == ("a", "b")
    svc.close()
    again = make(
        tmp_path, clock, slow_nodes__window_s=5.0, slow_nodes__policy=StragglerPolicy.EXCLUDE
    )
    assert again.heartbeat(C, 0).excluded  # journaled: a restarted master keeps it out
    assert not again.get_world(C, 3).complete


def test_exclusion_never_takes_the_world_below_its_minimum(
    tmp_path: Path, logs: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    svc = watched(tmp_path, clock, StragglerPolicy.EXCLUDE, rendezvous__min_nodes=3)
    slow_c_for(svc, clock, 6.0)
    [line] = straggling(logs)
    assert "action=reported" in line
    assert not svc.heartbeat(C, 0).excluded


def test_off_watches_nothing(tmp_path: Path, logs: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    svc = watched(tmp_path, clock, StragglerPolicy.OFF)
    slow_c_for(svc, clock, 8.0)
    assert straggling(logs) == []


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("slow_nodes__ratio", 0.5, r"--straggler-ratio\) must be > 1, got 0.5"),
        ("slow_nodes__window_s", -1.0, r"--straggler-window\) must be > 0 seconds, got -1.0"),
    ],
)
def test_bad_straggler_settings_name_the_flag(field: str, value: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MasterConfig().with_overrides(**{field: value})


def test_the_timeline_narrates_a_straggler() -> None:
    ev = timeline.TimelineEvent(
        1.0,
        timeline.STRAGGLING,
        {"node": "c", "step_seconds": 0.5, "others_seconds": 0.1, "times_slower": 5.0,
         "action": "excluded"},
    )  # fmt: skip
    [(_, text)] = timeline.narrate([ev])
    assert text == "node c straggling: own step 0.5 s, 5.0x the others' median 0.1 s (excluded)"


def test_nodes_that_failed_the_preflight_check_are_kept_out(
    tmp_path: Path, logs: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    svc = make(tmp_path, clock, slow_nodes__policy=StragglerPolicy.OFF)  # independent of the watch
    form_world(svc, A, B, C)
    why = {"c": "pre-flight check failed: boom"}
    assert svc.exclude_nodes(A, 0, why) == ()  # a stale round changes nothing
    assert svc.exclude_nodes(NodeRef("x"), 1, why) == ()  # nor a node outside the world
    assert not svc.heartbeat(C, 0).excluded
    assert svc.exclude_nodes(A, 1, why) == ("c",)
    assert svc.exclude_nodes(B, 1, why) == ("c",)  # every rank asks: the same answer
    assert svc.exclude_nodes(C, 1, why) == ("c",)
    assert svc.heartbeat(C, 0).excluded
    lines = [r.getMessage() for r in logs.records if "event=preflight_failed" in r.message]
    assert len(lines) == 1 and "node=c" in lines[0] and "action=excluded" in lines[0]
    form_world(svc, A, B)
    assert svc.get_world(A, 2).members == ("a", "b")


def test_preflight_exclusion_keeps_the_world_at_its_minimum(tmp_path: Path) -> None:
    clock = FakeClock()
    svc = make(tmp_path, clock)
    form_world(svc, A, B, C)  # min_nodes 2
    why = {"b": "slow", "c": "slow"}
    assert svc.exclude_nodes(A, 1, why) == ("b",)  # one of them: two nodes are left
    assert svc.exclude_nodes(C, 1, why) == ("b",)
    assert not svc.heartbeat(C, 0).excluded


def test_the_timeline_narrates_a_failed_preflight_check() -> None:
    ev = timeline.TimelineEvent(
        1.0, timeline.PREFLIGHT_FAILED, {"node": "c", "reason": "boom", "action": "excluded"}
    )
    [(_, text)] = timeline.narrate([ev])
    assert text == "node c failed the pre-flight check: boom (excluded)"


def test_preflight_exclusion_takes_the_worst_first(tmp_path: Path) -> None:
    clock = FakeClock()
    svc = make(tmp_path, clock)
    form_world(svc, A, B, C)  # min_nodes 2: room for one
    assert svc.exclude_nodes(A, 1, {"c": "failed: boom", "b": "slow"}) == ("c",)
