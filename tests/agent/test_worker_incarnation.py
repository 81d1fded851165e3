"""A worker carries the membership its agent started it under (``FLEXJOB_INCARNATION``,
``core.training.fencing``): its calls to the master say which membership they belong to, so
the master refuses them once that membership is fenced. Real master, real agent process."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flexjob.core.training.dataset import Dataset
from flexjob.master.main import start_master
from tests.support.masters import master_config

pytestmark = pytest.mark.timeout(180)

#: The worker writes the incarnation its master link's calls carry.
SCRIPT = """import sys
from flexjob.trainer.link import MasterLink
from flexjob.trainer.world import node_identity
link = MasterLink(node_identity())
open(sys.argv[1], "w").write(f"{link.node.incarnation} {link.proc.incarnation}")
link.close()
"""


def test_the_agent_starts_its_workers_with_the_incarnation_its_heartbeat_got(
    tmp_path: Path,
) -> None:
    config = master_config(
        "incarnation",
        tmp_path / "job",
        datasets=(Dataset(size=10, shard_size=5, epochs=1),),
        node_health__heartbeat_timeout=600.0,
    )
    script, out = tmp_path / "worker.py", tmp_path / "incarnation"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLEXJOB_")}
    with start_master(config, token="") as master:
        cmd = [
            sys.executable, "-m", "flexjob", "agent", "--master", master.address,
            "--node-id", "worker-0", "--job-name", "incarnation",
            "--run-dir", str(tmp_path / "run"), str(script), str(out),
        ]  # fmt: skip
        agent = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    assert agent.returncode == 0, agent.stdout.decode() + agent.stderr.decode()
    # A fresh master's first member is incarnation 1 (0 would be "not said": never fenced).
    assert out.read_text() == "1 1"
