"""Splitting reconcile's actions into batches that may run concurrently."""

from flexjob.api import ScalePlanPhase
from flexjob.core.actions import CreateService, DeleteReplica, RecordEvent, UpdateScalePlan
from flexjob.operator.reconcile_pass import batches


def test_independent_actions_form_one_batch_between_barriers() -> None:
    service = CreateService(request=None)  # type: ignore[arg-type]
    deletes = [DeleteReplica("ns", f"r{i}") for i in range(3)]
    event = RecordEvent("ns", "j", "SuccessfulDelete", "gone")
    plan = UpdateScalePlan("ns", "p", ScalePlanPhase.SUCCEEDED)
    result = batches([service, *deletes, event, plan, deletes[0]])
    assert result == [[service], [*deletes, event], [plan], [deletes[0]]]
