"""A job's life seen by its user: ``flexjob run`` with a node lost mid-training prints one
flexjob line for it, the agents serve /metrics, and ``--plot`` writes the timeline PNG."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flexjob.observe import plot, timeline
from tests.e2e.jobs import poll, running
from tests.support.metrics import dashboard_metrics, metrics_url, scrape, value
from tests.support.png import png_size

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

ARGS = ("--epochs", "3", "--step-delay", "0.05")


def test_lost_node_is_one_line_agents_serve_metrics_and_the_plot_marks_it(
    tmp_path: Path,
) -> None:
    png = tmp_path / "life.png"
    # --max-restarts 0: the killed node stays gone (the run supervisor would bring it back).
    flags = ("--nnodes", "1:2", "--start-nodes", "2", "--heartbeat-timeout", "3")
    flags += ("--max-restarts", "0")
    with running(tmp_path, *flags, "--plot", str(png), script_args=ARGS) as job:
        job.wait_progress(0.2, world_size=2)
        url = metrics_url(job.job_dir / "metrics-worker-0.addr")
        node = {"job_name": "job", "node": "worker-0"}

        def trained(g: dict) -> bool:  # type: ignore[type-arg]
            step = value(g, "flexjob_agent_step", **node)
            return step > 0 and value(g, "flexjob_agent_samples_total", **node) > 0

        got = poll("agent metrics", lambda: (g := scrape(url)) and trained(g) and g, 30)
        assert "flexjob_agent_samples_per_second" not in got  # rate() of the counter
        assert 0 < value(got, "flexjob_agent_cpu_ratio", **node) < 64  # cores, not %
        assert dashboard_metrics("flexjob_agent_") <= set(got)
        assert value(got, "flexjob_agent_memory_bytes", **node) > 0
        agents = poll("two agents", lambda: len(job.agents()) == 2 and job.agents(), 30)
        victim = next(a for a in agents if "worker-1" in " ".join(a.cmdline()))
        victim.kill()
        assert job.wait() == 0, job.output()
    out = job.output()
    assert re.search(r"^flexjob: node worker-1 lost, world 2 → 1, resumed in \d+\.\d s$", out, re.M)
    assert "gloo" not in out, out  # the flexjob line, not the collective's raw error
    assert png_size(png) == (plot.DPI * 10, plot.DPI * 6)
    marked = plot.marked_changes(timeline.read(job.job_dir))
    # The supervisor reports the dead agent's processes (failed) before its heartbeat would
    # expire (lost): either way the plot marks worker-1, and only it.
    assert marked, "the plot marks no event"
    assert {(c.kind, c.node) for c in marked} <= {("failed", "worker-1"), ("lost", "worker-1")}
