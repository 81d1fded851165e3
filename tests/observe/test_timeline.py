"""The job timeline: records written and read back, narrated as a user reads them, drawn."""

import dataclasses
import json
from pathlib import Path

from matplotlib.lines import Line2D
from matplotlib.text import Annotation

from flexjob.observe import plot, timeline
from flexjob.observe.timeline import TimelineEvent, TimelineSample
from tests.support.png import png_size

EVENTS = (
    TimelineEvent(100.0, timeline.JOINED, {"node": "worker-0"}),
    TimelineEvent(100.1, timeline.JOINED, {"node": "worker-1"}),
    TimelineEvent(100.2, timeline.JOINED, {"node": "worker-2"}),
    TimelineEvent(
        100.5,
        timeline.ROUND,
        {"round": 1, "world_size": 3, "members": "worker-0,worker-1,worker-2"},
    ),
    TimelineEvent(110.0, timeline.LOST, {"node": "worker-2", "reason": "heartbeat timeout"}),
    TimelineEvent(
        110.4, timeline.ROUND, {"round": 2, "world_size": 2, "members": "worker-0,worker-1"}
    ),
    TimelineEvent(120.0, timeline.JOINED, {"node": "worker-3"}),
    TimelineEvent(
        121.5,
        timeline.ROUND,
        {"round": 3, "world_size": 3, "members": "worker-0,worker-1,worker-3"},
    ),
)
SAMPLES = tuple(
    TimelineSample(
        100.0 + t, 3 if t < 10 or t > 21 else 2, 300.0 if t < 10 else 200.0, t * 4, t, 40
    )
    for t in range(0, 30, 2)
)


def write(job_dir: Path, records: list[dict[str, object]], torn: str = "") -> None:
    job_dir.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in records) + torn
    (job_dir / timeline.FILE_NAME).write_text(text)


def test_a_lost_and_a_joined_node_each_read_as_one_line() -> None:
    lines = [text for _, text in timeline.narrate(EVENTS)]
    assert lines == [
        "node worker-2 lost, world 3 → 2, resumed in 0.4 s",
        "node worker-3 joined, world 2 → 3, resumed in 1.5 s",
    ]


def test_a_failure_that_restarts_reads_as_failed_then_restarted() -> None:
    both = {"world_size": 2, "members": "worker-0,worker-1"}
    events = (
        TimelineEvent(1.0, timeline.ROUND, {"round": 1, **both}),
        TimelineEvent(
            5.0, timeline.FAILED, {"node": "worker-1", "exit_code": 3, "restarting": True}
        ),
        TimelineEvent(6.0, timeline.ROUND, {"round": 2, **both}),
    )
    assert [t for _, t in timeline.narrate(events)] == [
        "node worker-1 failed (exit code 3, restarting)",
        "node worker-1 restarted, world 2 → 2, resumed in 1.0 s",
    ]


def test_survivors_that_re_form_before_the_loss_is_declared_still_name_the_lost_node() -> None:
    events = (
        TimelineEvent(
            1.0, timeline.ROUND, {"round": 1, "world_size": 2, "members": "worker-1,worker-0"}
        ),
        TimelineEvent(
            9.0, timeline.JOINED, {"node": "worker-0"}
        ),  # its collective failed: it re-joins
        TimelineEvent(10.0, timeline.ROUND, {"round": 2, "world_size": 1, "members": "worker-0"}),
        TimelineEvent(12.0, timeline.LOST, {"node": "worker-1", "reason": "heartbeat timeout"}),
    )
    assert timeline.narrate(events) == [(9.0, "node worker-1 lost, world 2 → 1, resumed in 1.0 s")]


def test_the_file_reads_back_and_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    records = [timeline.event_record(e) for e in EVENTS]
    records += [timeline.sample_record(s) for s in SAMPLES]
    write(tmp_path, records, torn='{"kind": "sample", "t": 1')
    tl = timeline.read(tmp_path)
    assert tl.events == EVENTS
    assert [s.world_size for s in tl.samples] == [s.world_size for s in SAMPLES]


def test_follower_tells_each_line_once_as_the_file_grows(tmp_path: Path) -> None:
    follower = timeline.Follower(tmp_path)
    assert follower.new_lines() == []
    write(tmp_path, [timeline.event_record(e) for e in EVENTS[:5]])
    assert follower.new_lines() == []  # the loss waits for the round that resumes training
    write(tmp_path, [timeline.event_record(e) for e in EVENTS[:6]])
    assert follower.new_lines() == ["node worker-2 lost, world 3 → 2, resumed in 0.4 s"]
    assert follower.new_lines() == []


def test_summary_names_peak_throughput_and_the_events() -> None:
    text = "\n".join(timeline.summary(timeline.Timeline(SAMPLES, EVENTS)))
    assert "world sizes [2, 3]; peak 300 samples/s; shards 28/40" in text
    assert "+   10.0 s  node worker-2 lost, world 3 → 2, resumed in 0.4 s" in text


def test_plot_has_both_axes_and_marks_each_loss_and_join(tmp_path: Path) -> None:
    tl = timeline.Timeline(SAMPLES, EVENTS)
    fig = plot.timeline_figure(tl, "digits")
    top, bottom = fig.axes
    assert (top.get_ylabel(), bottom.get_ylabel()) == ("samples/s", "world size")
    assert bottom.get_xlabel() == "seconds since the job started"
    assert top.get_title() == "digits"
    marks = [
        ln for ax in fig.axes for ln in ax.get_lines() if str(ln.get_gid()).startswith("change:")
    ]
    by_kind = sorted((str(ln.get_gid()), float(ln.get_xdata()[0])) for ln in marks)  # type: ignore[index]
    assert by_kind == [
        ("change:joined", 20.0),
        ("change:joined", 20.0),
        ("change:lost", 10.0),
        ("change:lost", 10.0),
    ]
    labels = sorted(a.get_text() for a in top.texts if isinstance(a, Annotation))
    assert labels == ["worker-2 lost", "worker-3 joined"]
    (throughput,) = [ln for ln in top.get_lines() if isinstance(ln, Line2D) and not ln.get_gid()]
    assert max(throughput.get_ydata()) == 300.0  # type: ignore[arg-type]
    path = plot.save_plot(tl, tmp_path / "life.png", "digits")
    assert png_size(path) == (1000, 600)


def test_plot_draws_the_loss_the_timeline_records_on_its_own_axis() -> None:
    with_loss = tuple(
        dataclasses.replace(s, loss=None if i == 0 else 2.0 / i) for i, s in enumerate(SAMPLES)
    )
    fig = plot.timeline_figure(timeline.Timeline(with_loss, EVENTS), "digits")
    (right,) = [ax for ax in fig.axes if ax.get_ylabel() == "loss"]
    (loss,) = [ln for ln in right.get_lines() if ln.get_gid() == "loss"]
    assert list(loss.get_ydata()) == [s.loss for s in with_loss[1:]]  # type: ignore[arg-type]
    assert list(loss.get_xdata()) == [s.t - with_loss[0].t for s in with_loss[1:]]  # type: ignore[arg-type]
