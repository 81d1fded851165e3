"""Draw a job's timeline: throughput, loss and world size over time, events marked (matplotlib Agg).

``timeline_figure`` builds the figure (two stacked axes sharing the time axis: samples/s on
top with rank 0's loss on its right axis, world size below; each node lost / joined /
restarted / failed and each scale as a vertical line on both, labelled on the top one);
``save_plot`` writes it as a PNG. For ``flexjob plot JOB`` and ``flexjob run --plot FILE``.
Not for interactive display (no GUI backend is used).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from flexjob.api.extras import import_extra
from flexjob.observe import timeline
from flexjob.observe.timeline import Timeline

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: How each kind of change is marked: its colour.
MARKS = {
    "lost": "tab:red",
    "joined": "tab:green",
    "restarted": "tab:olive",
    "failed": "tab:orange",
    "scaled": "tab:purple",
}
SIZE_INCHES = (10.0, 6.0)
DPI = 100


def marked_changes(tl: Timeline) -> list[timeline.WorldChange]:
    """The changes a plot marks: every node lost, joined, restarted or failed, every scale."""
    return [c for c in timeline.changes(tl.events) if c.kind in MARKS]


def timeline_figure(tl: Timeline, title: str = "") -> Figure:
    figure = import_extra("matplotlib.figure", "plot", "plotting a timeline")
    fig: Figure = figure.Figure(figsize=SIZE_INCHES, dpi=DPI)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    t0 = tl.start
    xs = [s.t - t0 for s in tl.samples]
    top.plot(xs, [s.samples_per_second for s in tl.samples], color="tab:blue", label="samples/s")
    top.set_ylabel("samples/s")
    top.set_ylim(bottom=0)
    top.grid(True, alpha=0.3)
    losses = [(x, s.loss) for x, s in zip(xs, tl.samples, strict=True) if s.loss is not None]
    if losses:  # rank 0's reported loss, on its own axis (one unit per axis)
        right = top.twinx()
        right.plot(*zip(*losses, strict=True), color="tab:brown", gid="loss", label="loss")
        right.set_ylabel("loss")
    bottom.step(xs, [s.world_size for s in tl.samples], where="post", color="tab:gray")
    bottom.set_ylabel("world size")
    bottom.set_xlabel("seconds since the job started")
    bottom.grid(True, alpha=0.3)
    worlds = [s.world_size for s in tl.samples] or [0]
    bottom.set_ylim(0, max(worlds) + 1)
    for c in marked_changes(tl):
        colour = MARKS[c.kind]
        x = c.t - t0
        for ax in (top, bottom):
            ax.axvline(x, color=colour, linestyle="--", linewidth=1, gid=f"change:{c.kind}")
        top.annotate(
            f"{c.node} {c.kind}".strip(),
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
