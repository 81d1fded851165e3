"""`flexjob describe` shows a local job's timeline as text; `flexjob plot` draws it from a job's
name or a job directory."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flexjob.cli.main import app
from flexjob.cli.timeline_cmds import job_timeline_dir
from flexjob.observe import timeline
from flexjob.platform.local import LocalPlatform
from tests.observe.test_timeline import EVENTS, SAMPLES
from tests.support.local_jobs import local_job
from tests.support.png import png_size

LOST = "node worker-2 lost, world 3 → 2, resumed in 0.4 s"


def write_timeline(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    records = [timeline.event_record(e) for e in EVENTS]
    records += [timeline.sample_record(s) for s in SAMPLES]
    (directory / timeline.FILE_NAME).write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FLEXJOB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FLEXJOB_PLATFORM", "local")
    return tmp_path / "home"


def test_describe_and_plot_read_the_timeline_of_a_local_job(home: Path, tmp_path: Path) -> None:
    platform = LocalPlatform(home)
    job = platform.create_job(local_job("seen", None, "print('hi')"))
    write_timeline(job_timeline_dir(job, home))
    described = CliRunner().invoke(app, ["describe", "seen"])
    assert described.exit_code == 0, described.output
    assert "Timeline:" in described.output and LOST in described.output
    png = tmp_path / "seen.png"
    plotted = CliRunner().invoke(app, ["plot", "seen", "-o", str(png)])
    assert plotted.exit_code == 0, plotted.output
    assert png_size(png) == (1000, 600)


def test_plot_takes_a_run_job_directory(tmp_path: Path) -> None:
    write_timeline(tmp_path / "job")
    out = tmp_path / "run.png"
    done = CliRunner().invoke(app, ["plot", str(tmp_path / "job"), "--output", str(out)])
    assert done.exit_code == 0, done.output
    assert png_size(out) == (1000, 600)


def test_plot_of_a_job_without_a_timeline_says_where_it_looked(home: Path) -> None:
    LocalPlatform(home).create_job(local_job("quiet", None, "print('hi')"))
    done = CliRunner().invoke(app, ["plot", "quiet"])
    assert done.exit_code == 1
    assert "no timeline in" in done.output
