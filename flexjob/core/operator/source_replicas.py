"""A DIJob v2's ``status.replicas`` edited by someone other than the operator is a size the job
should have (the newest intent wins), not a count to write over. No I/O.

The operator writes a DIJob v2's status in DI's shape (``api.foreign_kinds.source_status``:
``replicas`` is how many replicas the job has, pending or running). A write of another value
by someone else (a user's ``kubectl patch --subresource status``, DI tooling), made after the
operator's own last write of that status (a higher ``resourceVersion``: the API server's
revisions grow), is taken as the total the job should have: the difference goes to the type
the scaling APIs resize (``api.roles.scaling_target``), within its bounds, as
``status.replicas`` of the job's ElasticJob, as if the server's ``/v2alpha1`` had been asked.
Only a preemptible job may change size that way (DI Orchestrator: only a preemptible job's
replicas follow its status); otherwise, or out of bounds, or finished, the edit is refused
with the reason and written over. ``edited_total`` says whether a write is such an edit;
``replicas_for_total`` what the job's counts become.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flexjob.api import ElasticJob, ReplicaType
from flexjob.api.roles import scaling_target
from flexjob.core.operator.scale_bounds import bound_problem, finished_problem


@dataclass(frozen=True, slots=True)
class Written:
    """The operator's last write of a source's status: its resourceVersion and ``replicas``."""

    version: int
    replicas: object


def edited_total(
    status: Mapping[str, Any] | None, version: int, ours: Written | None
) -> int | None:
    """The total a write at ``version`` with ``status`` asks for when it is someone else's edit
    of ``replicas`` made after the operator's last write ``ours``; else None (the operator's
    own write, an older one, one that left ``replicas`` as written, or none written yet)."""
    if ours is None or version <= ours.version or not status:
        return None
    replicas = status.get("replicas")
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas == ours.replicas:
        return None
    return replicas


@dataclass(frozen=True, slots=True)
class TotalChange:
    """What an edited total does: the new count of one type, or why it is refused."""

    replicas: dict[ReplicaType, int]
    problem: str | None = None


def replicas_for_total(
    job: ElasticJob, counts: Mapping[ReplicaType, int], total: int
) -> TotalChange:
    """``job``'s new ``status.replicas`` entry when its replicas, now ``counts`` by type (what
    the job should have), are to total ``total``; the problem instead when it may not."""
    where = f"status.replicas: {total}"
    if total < 0:
        return TotalChange({}, f"{where}: must be >= 0")
    if not job.spec.preemptible:
        return TotalChange(
            {}, f"{where}: job {job.namespace}/{job.name} is not preemptible (its size is fixed)"
        )
    finished = finished_problem(job)
    if finished is not None:
        return TotalChange({}, f"{where}: {finished}")
    target = scaling_target(job.spec.replica_specs)
    if target is None:
        return TotalChange({}, f"{where}: job {job.namespace}/{job.name} has no scalable replicas")
    wanted = counts.get(target, 0) + total - sum(counts.values())
    problem = bound_problem(job, target, wanted)
    if problem is not None:
        return TotalChange({}, f"{where}: {problem}")
    return TotalChange({target: wanted})
