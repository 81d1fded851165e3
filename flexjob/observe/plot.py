"""Draw a job's timeline: throughput and world size over time, events marked (matplotlib Agg).

``timeline_figure`` builds the figure (two stacked axes sharing the time axis: samples/s on
top, world size below; each node lost / joined / failed and each scale as a vertical line on
both, labelled on the top one); ``save_plot`` writes it as a PNG. For ``flexjob plot JOB`` and
``flexjob run --plot FILE``. Not for interactive display (no GUI backend is used).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from flexjob.observe import timeline
from flexjob.observe.timeline import Timeline

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: How each kind of event is marked: (colour, short label).
MARKS = {
    timeline.LOST: ("tab:red", "lost"),
    timeline.JOINED: ("tab:green", "joined"),
    timeline.FAILED: ("tab:orange", "failed"),
    timeline.SCALED: ("tab:purple", "scaled"),
}
SIZE_INCHES = (10.0, 6.0)
DPI = 100


def marked_events(tl: Timeline) -> list[timeline.Event]:
    """The events a plot marks: joins after the first world, losses, failures, scales."""
    first_round = next((e.t for e in tl.events if e.name == timeline.ROUND), None)
    out = []
    for e in tl.events:
        if e.name not in MARKS:
            continue
        if e.name == timeline.JOINED and (first_round is None or e.t <= first_round):
            continue  # the nodes that formed the first world
        if e.name == timeline.JOINED and e.fields.get("implicit"):
            continue
        out.append(e)
    return out


def timeline_figure(tl: Timeline, title: str = "") -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=SIZE_INCHES, dpi=DPI)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    t0 = tl.start
    xs = [s.t - t0 for s in tl.samples]
    top.plot(xs, [s.samples_per_second for s in tl.samples], color="tab:blue", label="samples/s")
    top.set_ylabel("samples/s")
    top.grid(True, alpha=0.3)
    bottom.step(xs, [s.world_size for s in tl.samples], where="post", color="tab:gray")
    bottom.set_ylabel("world size")
    bottom.set_xlabel("seconds since the job started")
    bottom.grid(True, alpha=0.3)
    worlds = [s.world_size for s in tl.samples] or [0]
    bottom.set_ylim(0, max(worlds) + 1)
    for e in marked_events(tl):
        colour, label = MARKS[e.name]
        x = e.t - t0
        for ax in (top, bottom):
            ax.axvline(x, color=colour, linestyle="--", linewidth=1, gid=f"event:{e.name}")
        top.annotate(
            f"{e.node} {label}",
            (x, 1.0),
            xycoords=("data", "axes fraction"),
            rotation=90,
            va="top",
            ha="right",
            fontsize=8,
            color=colour,
        )
    top.set_title(title or "job timeline")
    fig.tight_layout()
    return fig


def save_plot(tl: Timeline, path: Path, title: str = "") -> Path:
    """Write the timeline's figure to ``path`` as a PNG; returns ``path``."""
    fig = timeline_figure(tl, title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path
