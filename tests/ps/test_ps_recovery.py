"""A SIGKILLed ``flexjob ps`` relaunched on its address restores its partition from its last
checkpoint, and a client's calls made while it was down are answered by the new process;
checkpoint files round-trip exactly and the newest complete set is the one restored."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from flexjob.core.ps.checkpoint import snapshot
from flexjob.core.ps.parameters import PsStore
from flexjob.platform.ports import free_port
from flexjob.ps.checkpoint_io import file_name, latest_set, read_snapshot, write_snapshot
from flexjob.rpc.ps_client import PsClient
from tests.support.polling import wait_until

from .conftest import MODEL

PS = (sys.executable, "-m", "flexjob", "ps")
INTERVAL = ("--checkpoint-interval", "0.3")


def start_ps(port: int, directory: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*PS, "--port", str(port), "--checkpoint-dir", str(directory), *INTERVAL],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def checkpointed_version(directory: Path) -> int:
    path = directory / file_name(0, 1)
    try:
        return read_snapshot(path).version
    except (OSError, ValueError, KeyError):
        return -1


def test_a_killed_ps_comes_back_with_its_checkpointed_partition(tmp_path: Path) -> None:
    directory, port = tmp_path / "ps-ckpt", free_port()
    ids = np.arange(0, 1000, 3, dtype=np.int64)
    first = start_ps(port, directory)
    client = PsClient(f"127.0.0.1:{port}", retry_deadline=60.0)
    try:
        client.configure(MODEL, 1)
        client.push_rows("user", ids, np.ones((ids.size, 4), dtype=np.float32))
        client.push_dense_async({"w": np.ones((2, 3), dtype=np.float32)}, 0).result()
        wait_until(lambda: checkpointed_version(directory) == 1, timeout=30, what="a checkpoint")
        saved_rows = client.lookup("user", ids)
        saved_dense = client.pull_dense()
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        pending = client.lookup_async("user", ids)  # sent while no PS serves
        second = start_ps(port, directory)
        try:
            np.testing.assert_array_equal(pending.result(), saved_rows)
            version, dense = client.pull_dense()
            assert version == saved_dense[0] == 1
            np.testing.assert_array_equal(dense["w"], saved_dense[1]["w"])
            _, created = client.configure(MODEL, 1)  # a worker re-declaring finds its model
            assert not created
        finally:
            second.send_signal(signal.SIGTERM)
            assert second.wait(timeout=30) == 0
        assert second.stdout is not None
        assert b"event=ps_restored index=0 num_ps=1 from_num_ps=1" in second.stdout.read()
    finally:
        client.close()
        if first.poll() is None:
            first.kill()


def test_checkpoint_files_round_trip_and_the_newest_complete_set_wins(tmp_path: Path) -> None:
    store = PsStore()
    store.configure(MODEL)
    ids = np.arange(50, dtype=np.int64)
    store.tables["item"].push(ids, np.full((50, 2), 0.25, dtype=np.float32))
    store.push_dense({"w": np.ones((2, 3), dtype=np.float32)})
    snap = snapshot(store, 0, 1)
    back = read_snapshot(write_snapshot(tmp_path, snap))
    assert (back.index, back.num_ps, back.version) == (0, 1, 1)
    assert (back.optimizer, back.tables) == (snap.optimizer, snap.tables)
    for name, rows in snap.rows.items():
        np.testing.assert_array_equal(back.rows[name].ids, rows.ids)
        np.testing.assert_array_equal(back.rows[name].rows, rows.rows)
        np.testing.assert_array_equal(back.rows[name].steps, rows.steps)
    np.testing.assert_array_equal(back.dense["w"].value, snap.dense["w"].value)
    assert [p.name for p in tmp_path.iterdir()] == [file_name(0, 1)]  # no temp file left

    write_snapshot(tmp_path, snapshot(store, 0, 2))  # set of 2: incomplete, ignored
    assert [(s.index, s.num_ps) for s in latest_set(tmp_path)] == [(0, 1)]
    write_snapshot(tmp_path, snapshot(store, 1, 2))
    older = tmp_path / file_name(0, 1)
    os.utime(older, ns=(1, 1))
    assert [(s.index, s.num_ps) for s in latest_set(tmp_path)] == [(0, 2), (1, 2)]
    assert latest_set(tmp_path / "missing") == []
