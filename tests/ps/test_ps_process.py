"""``flexjob ps`` as a process: registers its address with a real job master, serves, and
stops cleanly on SIGTERM."""

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from flexjob.core.master_config import MasterConfig
from flexjob.master.launch import spawn_master
from flexjob.rpc.client import MasterClient
from flexjob.rpc.ps_client import PsClient
from flexjob.rpc.ps_registry import resolve_ps

from .conftest import MODEL

PS = (sys.executable, "-m", "flexjob", "ps")


def test_ps_processes_register_with_the_master_and_serve(tmp_path: Path) -> None:
    master = spawn_master(
        MasterConfig(job_name="ps-reg", job_dir=str(tmp_path / "job"), host_store=False)
    )
    procs = [
        subprocess.Popen(
            [*PS, "--index", str(i), "--num-ps", "2", "--master", master.address],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for i in range(2)
    ]
    try:
        with MasterClient(master.address, "trainer-0") as mc:
            addresses = resolve_ps(mc, 2, timeout=60.0)
        assert len(set(addresses)) == 2
        for index, address in enumerate(addresses):
            client = PsClient(address, retry_deadline=10.0)
            client.configure(MODEL, 2)
            assert client.lookup("user", np.array([index], dtype=np.int64)).shape == (1, 4)
            assert client.stats().index == index
            client.close()
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        codes = [p.wait(timeout=30) for p in procs]
        master.stop()
    assert codes == [0, 0], [p.stdout.read() for p in procs if p.stdout]


def test_index_outside_the_set_is_refused() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flexjob", "ps", "--index", "2", "--num-ps", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "--index 2 must be in [0, --num-ps 2)" in out.stderr
