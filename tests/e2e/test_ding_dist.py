"""DI-engine 0.5.3's own dist pipeline (``examples/ding_dist``) as a DIJob v1 through
``flexjob submit`` next to a real ``flexjob server``: its coordinator asks the server for its
collectors and learner, hands out collect tasks, and the learner trains on what they send.

Needs a Python with di-engine 0.5.3, lz4 and numpy<2, named by ``FLEXJOB_DING_PYTHON``
(DI-engine is not a flexjob dependency: its gym 0.25.1 needs numpy<2; docs/di-engine.md shows
the environment). Skipped, saying so, without it. Checked from DI-engine's own commander logs:
the collector tasks that ended hold at least ``EPISODES`` episodes and reached train iteration
``ITERATIONS`` (about 2 to 4 minutes on a loaded two-core machine).
"""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flexjob.api import JobPhase
from flexjob.platform.local import LocalPlatform
from tests.support.polling import wait_until
from tests.support.server_process import flexjob_server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "ding_dist"
DING_PYTHON = os.environ.get("FLEXJOB_DING_PYTHON", "")
JOB = "ding-dist"
EPISODES = 40
ITERATIONS = 40
# DI-engine's commander logs one block per ended task: train_iter, then episode_count.
TASK_END = re.compile(r"\[COLLECTOR\] Task ends:\ntrain_iter: (\d+)\nepisode_count: (\d+)")


def ours(part: str, launch: str) -> str:
    """A command word (or ``sh -c`` script) with the test's interpreter and launcher."""
    part = part.replace("examples/ding_dist/launch.py", launch)
    return DING_PYTHON if part == "python" else part.replace("python ", f"{DING_PYTHON} ")


def spec(tmp_path: Path, run: Path) -> Path:
    """The example's DIJob with the test's interpreter, launcher path and working dir."""
    raw = yaml.safe_load((EXAMPLE / "dijob.yaml").read_text())
    launch = str(EXAMPLE / "launch.py")
    for role in ("coordinator", "collector", "learner"):
        container = raw["spec"][role]["template"]["spec"]["containers"][0]
        container["workingDir"] = str(run)
        container["command"] = [ours(part, launch) for part in container["command"]]
    path = tmp_path / "dijob.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def collected(run: Path) -> tuple[int, int]:
    """(episodes, highest train iteration) over the collector tasks that ended."""
    log = run / "cartpole_dqn" / "log" / "commander" / "commander_collector_logger.txt"
    ends = TASK_END.findall(log.read_text()) if log.exists() else []
    return sum(int(e) for _, e in ends), max((int(i) for i, _ in ends), default=0)


@pytest.mark.skipif(not DING_PYTHON, reason="FLEXJOB_DING_PYTHON: a Python with di-engine 0.5.3")
def test_ding_dist_collects_and_trains_under_flexjob(tmp_path: Path, home: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    env = {**os.environ, "FLEXJOB_HOME": str(home), "COLUMNS": "200"}
    platform = LocalPlatform(home)
    with flexjob_server(home) as url:
        env["FLEXJOB_SERVER_URL"] = url
        command = [sys.executable, "-m", "flexjob", "submit", str(spec(tmp_path, run))]
        job = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            wait_until(
                lambda: (e := collected(run))[0] >= EPISODES and e[1] >= ITERATIONS,
                timeout=420, interval=2.0, what=f"{EPISODES} episodes and iteration {ITERATIONS}",
            )  # fmt: skip
            status = platform.get_job("default", JOB).status
            assert status is not None and status.phase is JobPhase.RUNNING
            names = {r.name for r in platform.list_replicas("default", JOB)}
            assert names == {
                f"{JOB}-{n}" for n in ("coordinator-0", "collector-0", "collector-1", "learner-0")
            }
        finally:
            job.send_signal(signal.SIGINT)
            job.wait(timeout=60)
    episodes, iteration = collected(run)
    print(f"ding -m dist under flexjob: {episodes} episodes collected, train iteration {iteration}")
