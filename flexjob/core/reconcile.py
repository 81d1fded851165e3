"""``reconcile``: one job plus what runs for it → the actions to take and the job's new status.

Pure and deterministic: no I/O, time comes in as ``now``. Idempotent: feeding back the returned
status with an observation that reflects the applied actions yields no further actions. Drivers
(kopf handlers, the local loop) call it on every change and apply the actions in order.
"""

from collections.abc import Sequence
from datetime import datetime

from flexjob.api import ElasticJob, ScalePlan
from flexjob.core.actions import ReconcileResult
from flexjob.core.replicas import Replica, Service


def reconcile(
    job: ElasticJob,
    replicas: Sequence[Replica],
    now: datetime,
    *,
    services: Sequence[Service] = (),
    plan: ScalePlan | None = None,
) -> ReconcileResult:
    """Decide what to do for ``job`` given the ``replicas`` and ``services`` observed.

    ``plan`` is the oldest ScalePlan of this job not yet Succeeded/Failed (None if none).
    Observed objects of other jobs are ignored (never deleted). ``now`` must be timezone-aware.
    """
    raise NotImplementedError
