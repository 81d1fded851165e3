"""A reconcile pass's reads (one by one or at once) and its batches of actions."""

from datetime import UTC, datetime
from pathlib import Path

from flexjob.api import ScalePlanPhase
from flexjob.core.actions import CreateService, DeleteReplica, RecordEvent, UpdateScalePlan
from flexjob.operator.reconcile_pass import batches, observe, reconcile_job
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
