"""Several DIJob v2 tasks of one type on the local platform: the collectors the operator
renders (``reconcile``, through the test simulator) run as real processes, each its own task's
command, each seeing its own task's name."""

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flexjob.api import ReplicaType
from flexjob.api.defaults import apply_defaults
from flexjob.api.load import job_from_dict
from flexjob.core.operator.actions import CreateReplica
from flexjob.platform.local import LocalPlatform
from tests.api.specs import two_collector_tasks
from tests.core.operator.reconcile_sim import Sim
from tests.support.polling import wait_until

# Each task's command prints its own word and the task name it was given.
SAY = "import os, sys; print(sys.argv[1], os.environ['FLEXJOB_TASK_NAME'])"


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[LocalPlatform]:
    local = LocalPlatform(tmp_path)
    yield local
    local.close()


def _says(word: str) -> dict[str, Any]:
    container = {
        "name": "di-container",
        "image": "ding",
        "command": [sys.executable, "-c", SAY, word],
    }
    return {"spec": {"containers": [container]}}


def test_each_collector_runs_its_own_tasks_command_and_sees_its_tasks_name(
    platform: LocalPlatform,
) -> None:
    raw = two_collector_tasks()
    raw["spec"]["tasks"][1]["template"] = _says("first")
    raw["spec"]["tasks"][2]["template"] = _says("second")
    sim = Sim(apply_defaults(job_from_dict(raw)))
    sim.settle()
    requests = [
        a.request
        for step in sim.history
        for a in step
        if isinstance(a, CreateReplica) and a.request.type is ReplicaType.COLLECTOR
    ]
    names = [platform.create_replica(r).name for r in requests]

    def output(name: str) -> str:
        return "".join(platform.read_logs("default", name)).strip()

    wait_until(lambda: all(output(n) for n in names), timeout=60, what="every collector's line")
    said = {n.rsplit("-", 1)[1]: output(n) for n in names}
    assert said == {
        "0": "first collector",
        "1": "first collector",
        "2": "second collector-b",
        "3": "second collector-b",
        "4": "second collector-b",
    }
