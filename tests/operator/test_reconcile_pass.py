"""A reconcile pass's reads (one by one or at once) and its batches of actions."""

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import pytest

from flexjob.api import ScalePlanPhase
from flexjob.core.operator.actions import CreateService, DeleteReplica, RecordEvent, UpdateScalePlan
from flexjob.operator.reconcile_pass import (
    ActionFailed,
    apply_in_batches,
    batches,
    observe,
    reconcile_job,
)
from flexjob.platform.contract import Platform
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import local_job


def test_independent_actions_form_one_batch_between_barriers() -> None:
    service = CreateService(request=None)  # type: ignore[arg-type]
    deletes = [DeleteReplica("ns", f"r{i}") for i in range(3)]
    event = RecordEvent("ns", "j", "SuccessfulDelete", "gone")
    plan = UpdateScalePlan("ns", "p", ScalePlanPhase.SUCCEEDED)
    result = batches([service, *deletes, event, plan, deletes[0]])
    assert result == [[service], [*deletes, event], [plan], [deletes[0]]]


def test_reads_sent_at_once_observe_what_reads_one_by_one_do(tmp_path: Path) -> None:
    platform = LocalPlatform(tmp_path / "home")
    try:
        platform.create_job(local_job("seen", master=None, worker="import time", workers=2))
        reconcile_job(platform, "default", "seen", datetime.now(UTC))  # rank 0's service
        reconcile_job(platform, "default", "seen", datetime.now(UTC))  # creates the workers
        one_by_one = observe(platform, "default", "seen", parallel=1)
        at_once = observe(platform, "default", "seen", parallel=4)
        assert one_by_one is not None and at_once is not None
        assert at_once[0].metadata.resource_version == one_by_one[0].metadata.resource_version
        assert [r.name for r in at_once[1]] == [r.name for r in one_by_one[1]]
        assert len(at_once[1]) == 2
        assert at_once[2:] == one_by_one[2:]
        assert observe(platform, "default", "missing", parallel=4) is None
        assert observe(platform, "default", "missing", parallel=1) is None
    finally:
        platform.close()


class DeletesInFlight:
    """A platform's ``delete_replica`` that takes a moment and records how many calls were in
    flight as each began (the only call the deletes below make); ``refuse``: the name it
    fails."""

    def __init__(self, refuse: str | None = None) -> None:
        self.refuse = refuse
        self.started: list[tuple[str, int]] = []
        self._in_flight = 0
        self._lock = threading.Lock()

    def delete_replica(self, namespace: str, name: str) -> None:
        with self._lock:
            self._in_flight += 1
            self.started.append((name, self._in_flight))
        time.sleep(0.002)
        with self._lock:
            self._in_flight -= 1
        if name == self.refuse:
            raise RuntimeError("refused")


def test_slow_start_sends_one_first_then_at_most_parallel_at_a_time() -> None:
    platform = DeletesInFlight()
    deletes = [DeleteReplica("ns", f"r{i}") for i in range(40)]
    apply_in_batches(cast(Platform, platform), deletes, parallel=8)
    assert sorted(name for name, _ in platform.started) == sorted(d.name for d in deletes)
    assert platform.started[0] == ("r0", 1)  # alone: nothing else until it succeeded
    assert platform.started[1][1] <= 2  # then two at a time
    assert max(in_flight for _, in_flight in platform.started) <= 8


def test_slow_start_sends_nothing_after_the_first_action_failed() -> None:
    platform = DeletesInFlight(refuse="r0")
    deletes = [DeleteReplica("ns", f"r{i}") for i in range(40)]
    with pytest.raises(ActionFailed) as failed:
        apply_in_batches(cast(Platform, platform), deletes, parallel=8)
    assert failed.value.action == deletes[0]
    assert platform.started == [("r0", 1)]
