"""``flexjob ps`` as a process: registers its address with a real job master, serves, and
stops cleanly on SIGTERM."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from flexjob.api import names
from flexjob.master.launch import spawn_master
from flexjob.ps.checkpoint_io import file_name
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef
from flexjob.rpc.ps_client import PsClient
from flexjob.rpc.ps_registry import Lost, publish_ps, report_restore, resolve_ps
from tests.support.masters import master_config
from tests.support.polling import wait_until

from .conftest import MODEL

PS = (sys.executable, "-m", "flexjob", "ps")
LONG_INTERVAL = ("--checkpoint-interval", "600")


def test_ps_processes_register_with_the_master_and_serve(tmp_path: Path) -> None:
    master = spawn_master(master_config("ps-reg", tmp_path / "job"))
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


def test_a_restored_ps_counts_its_lost_dense_updates_in_the_master(tmp_path: Path) -> None:
    master = spawn_master(master_config("ps-lost", tmp_path / "job"))
    try:
        with MasterClient(master.address, NodeRef("ps-1", "ps", 1)) as ps:
            publish_ps(ps, 1, "127.0.0.1:1", version=10, dirty_rows=40)
            assert report_restore(ps, 1, restored_version=7) == Lost(3, 40)
            publish_ps(ps, 1, "127.0.0.1:1", version=9, dirty_rows=2)
            assert report_restore(ps, 1, restored_version=9) == Lost(0, 2)
            assert report_restore(ps, 1, restored_version=9) == Lost(0, 0)  # counted once
            assert ps.kv_add(names.KV_PS_LOST_UPDATES, 0) == 3
            assert ps.kv_add(names.KV_PS_LOST_ROWS, 0) == 42
        state = json.loads((tmp_path / "job" / "master_state.json").read_text())
        record = state["stats"]["ps-1"]
        assert record["failures"] == 3
        assert record["last_failure"].endswith(
            "restored its checkpoint at dense version 9; 0 dense updates since then lost "
            "(3 in this job), 0 embedding rows' pushes lost (42 in this job)"
        )
    finally:
        master.stop()


def test_a_ps_checkpoints_when_the_masters_kv_asks_for_it(tmp_path: Path) -> None:
    master = spawn_master(master_config("ps-ask", tmp_path / "job"))
    ckpt = tmp_path / "ps-ckpt"
    proc = subprocess.Popen(
        [*PS, "--master", master.address, "--checkpoint-dir", str(ckpt), *LONG_INTERVAL],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        with MasterClient(master.address, "trainer-0") as mc:
            (address,) = resolve_ps(mc, 1, timeout=60.0)
            client = PsClient(address, retry_deadline=10.0)
            client.configure(MODEL, 1)
            client.close()
            assert not (ckpt / file_name(0, 1)).exists()
            mc.kv_set(names.KV_PS_CHECKPOINT_REQUEST, b"1")
            wait_until(lambda: (ckpt / file_name(0, 1)).exists(), timeout=30, what="checkpoint")
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        master.stop()
    assert code == 0


def test_a_killed_ps_counts_the_rows_pushed_since_its_checkpoint_as_lost(tmp_path: Path) -> None:
    master = spawn_master(master_config("ps-rows", tmp_path / "job"))
    args = [*PS, "--master", master.address, "--checkpoint-dir", str(tmp_path / "ckpt")]
    first = subprocess.Popen([*args, *LONG_INTERVAL], stdout=subprocess.DEVNULL)
    second = None
    try:
        with MasterClient(master.address, "trainer-0") as mc:
            (address,) = resolve_ps(mc, 1, timeout=60.0)
            client = PsClient(address, retry_deadline=10.0)
            client.configure(MODEL, 1)
            grads = np.ones((10, 4), dtype=np.float32)
            client.push_rows("user", np.arange(10, dtype=np.int64), grads)
            mc.kv_set(names.KV_PS_CHECKPOINT_REQUEST, b"1")
            ckpt = tmp_path / "ckpt" / file_name(0, 1)
            wait_until(ckpt.exists, timeout=30, what="checkpoint")
            after = np.array([8, 9, 10, 11, 12, 13, 14], dtype=np.int64)  # 2 checkpointed
            client.push_rows("user", after, grads[:7])
            client.push_rows("user", after[:3], grads[:3])  # the same rows again: still 7
            client.close()
            dirty = f"{names.KV_PS_DIRTY_ROWS_PREFIX}0"
            wait_until(lambda: mc.kv_get(dirty) == b"7", timeout=30, what="7 rows published")
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
            second = subprocess.Popen([*args, *LONG_INTERVAL], stdout=subprocess.DEVNULL)
            wait_until(
                lambda: mc.kv_add(names.KV_PS_LOST_ROWS, 0) == 7, timeout=60, what="7 rows lost"
            )
            assert mc.kv_add(names.KV_PS_LOST_UPDATES, 0) == 0  # no dense push was made
    finally:
        for p in (first, second):
            if p is not None and p.poll() is None:
                p.kill()
        master.stop()
