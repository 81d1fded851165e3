"""Finding a node's training processes by its agent's status files (``node_workers``), as
``benchmarks/recovery.py`` does: real files written by the trainer's ``StatusWriter``; and
which of a worker's states are final."""

from __future__ import annotations

import os
from pathlib import Path

from flexjob.agent.workers import WorkerRecord, WorkerState, node_workers, status_path
from flexjob.trainer.status import StatusWriter


def _write(path: Path) -> None:
    StatusWriter(str(path)).write(round=1, step=0, samples=0, epoch=0, world_size=2, force=True)


def test_a_node_s_workers_are_named_with_their_agent_and_local_rank(tmp_path: Path) -> None:
    for local_rank in (1, 0):
        _write(status_path(str(tmp_path), "worker-1", local_rank))
    me = os.getpid()  # the agent (status_path's caller) and the writer are this process here
    assert node_workers(tmp_path, "worker-1") == [
        WorkerRecord("worker-1", 0, me, me),
        WorkerRecord("worker-1", 1, me, me),
    ]


def test_nodes_whose_ids_start_alike_are_kept_apart(tmp_path: Path) -> None:
    for node in ("worker-1", "worker-10", "worker-1.x"):
        _write(status_path(str(tmp_path), node, 0))
    assert [r.node_id for r in node_workers(tmp_path, "worker-1")] == ["worker-1"]
    assert [r.node_id for r in node_workers(tmp_path, "worker-10")] == ["worker-10"]


def test_a_node_without_status_files_has_no_workers(tmp_path: Path) -> None:
    (tmp_path / "worker-1.0.123.status.json").write_text("")  # not written yet
    assert node_workers(tmp_path, "worker-1") == []
    assert node_workers(tmp_path, "worker-2") == []


def test_finished_worker_states() -> None:
    assert {s for s in WorkerState if s.finished} == {
        WorkerState.SUCCEEDED,
        WorkerState.FAILED,
        WorkerState.STOPPED,
    }
