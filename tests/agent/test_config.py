from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flexjob.agent.config import AgentConfig
from flexjob.agent.output import OutputConfig
from flexjob.core.training.master_config import MasterConfig
from flexjob.core.training.rendezvous import RendezvousConfig
from flexjob.runner.config import RunConfig, agent_command, parse_nnodes


@pytest.mark.parametrize(("text", "want"), [("2", (2, 2)), ("1:3", (1, 3))])
def test_nnodes_accepts_n_and_min_max(text: str, want: tuple[int, int]) -> None:
    assert parse_nnodes(text) == want


@pytest.mark.parametrize("text", ["0", "3:1", "a:b", "1:"])
def test_bad_nnodes_is_rejected_naming_the_option(text: str) -> None:
    with pytest.raises(ValueError, match="--nnodes"):
        parse_nnodes(text)


def test_run_starts_min_nodes_unless_start_nodes_is_given() -> None:
    agent = AgentConfig(target="t.py")
    master = MasterConfig(rendezvous=RendezvousConfig(min_nodes=2, max_nodes=3))
    assert RunConfig(agent, master).nodes_to_start == 2
    assert RunConfig(agent, master, start_nodes=3).nodes_to_start == 3


def test_agent_command_hands_the_agent_its_whole_config() -> None:
    opts = RunConfig(
        AgentConfig(
            target="train.py",
            args=("--lr", "0.1"),
            rendezvous_timeout=7.0,
            hang_timeout=9.0,
            output=OutputConfig(log_dir="/tmp/logs", tee="3"),
        )
    )
    cmd = agent_command("h:1", "worker-2", 2, opts, "/tmp/x")
    assert cmd[:3] == [sys.executable, "-m", "flexjob.agent.process"]
    config = AgentConfig.from_dict(json.loads(cmd[3]))
    assert (config.master, config.target, config.args) == ("h:1", "train.py", ("--lr", "0.1"))
    assert (config.node_id, config.replica_index, config.run_dir) == ("worker-2", 2, "/tmp/x")
    assert (config.rendezvous_timeout, config.hang_timeout) == (7.0, 9.0)
    assert config.output == OutputConfig(log_dir="/tmp/logs", tee="3")


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("master", {"master": "nohost"}),
        ("nproc_per_node", {"nproc_per_node": 0}),
        ("max_restarts", {"max_restarts": -1}),
        ("monitor_interval", {"monitor_interval": 0}),
    ],
)
def test_bad_agent_config_names_the_field(field: str, kwargs: dict[str, object]) -> None:
    base: dict[str, object] = {"master": "127.0.0.1:1", "target": "t.py"}
    with pytest.raises(ValueError, match=field):
        AgentConfig(**{**base, **kwargs})  # type: ignore[arg-type]


def test_flexjob_run_with_bad_nnodes_exits_2_with_a_message() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flexjob", "run", "--nnodes", "3:1", "x.py"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "--nnodes" in out.stderr


def test_options_after_the_script_belong_to_the_script(tmp_path: Path) -> None:
    script = tmp_path / "echo_args.py"
    script.write_text("import sys\nprint('ARGS', sys.argv[1:])\n")
    out = subprocess.run(
        [sys.executable, "-m", "flexjob", "run", "--no-progress", str(script), "--nnodes", "5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "ARGS ['--nnodes', '5']" in out.stdout
