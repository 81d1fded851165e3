"""torchrun with ``--rdzv-backend=flexjob``: real torchrun agents against a real master."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.core.training.master_config import MasterConfig
from flexjob.core.training.rendezvous import RendezvousConfig
from flexjob.master.launch import MasterProcess, spawn_master

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
SCRIPT = str(Path(__file__).with_name("plain_allreduce.py"))
# torchrun resolves backends through entry points, which need an installed flexjob; without
# one, register the same factory by hand and then run torchrun's real main().
TORCHRUN = (
    "import sys\n"
    "from torch.distributed.elastic.rendezvous import registry\n"
    "from flexjob.agent.torch_rendezvous import create_handler\n"
    "if 'flexjob' not in registry.handler_registry._registry:\n"
    "    registry.handler_registry.register('flexjob', create_handler())\n"
    "from torch.distributed.run import main\n"
    "main(sys.argv[1:])\n"
)


@pytest.fixture
def master(tmp_path: Path) -> Iterator[MasterProcess]:
    config = MasterConfig(
        job_dir=str(tmp_path / "job"), rendezvous=RendezvousConfig(min_nodes=2, max_nodes=2)
    )
    proc = spawn_master(config)
    yield proc
    proc.stop()


def _torchrun(master: str, node: int) -> subprocess.Popen[str]:
    args = [
        "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "flexjob",
        "--rdzv-endpoint", master, "--rdzv-id", "t", "--monitor-interval", "0.2",
        "--rdzv-conf", f"node_id=node-{node}", SCRIPT,
    ]  # fmt: skip
    cmd = [sys.executable, "-c", TORCHRUN, *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_torchrun_with_flexjob_backend_forms_a_world_of_two(master: MasterProcess) -> None:
    procs = [_torchrun(master.address, i) for i in range(2)]
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=100)
        outs.append(out)
        assert p.returncode == 0, out
    text = "".join(outs)
    assert text.count("sum=3 world=2") == 2, text


def test_entry_point_is_declared_for_torchrun() -> None:
    try:
        eps = importlib.metadata.entry_points(group="torchrun.handlers")
    except Exception as exc:  # pragma: no cover
        pytest.skip(f"entry points unreadable: {exc}")
    if not any(ep.name == "flexjob" for ep in eps):
        pytest.skip("flexjob is not installed (pip install -e .): entry points are not visible")
    (ep,) = [ep for ep in eps if ep.name == "flexjob"]
    assert callable(ep.load()())
