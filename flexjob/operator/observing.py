"""What the operator shows on its ``/metrics``: reconcile latency, queue depth, replicas by
phase per job, errors. Each function is the one line its event site calls.

The metrics are made when this module is imported, so a scrape lists every family (an error
counter reads as declared, not missing, before the first error). Not for deciding anything
(``core.operator.reconcile``) or for job status.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from flexjob.api import ReplicaPhase
from flexjob.core.replicas import Replica
from flexjob.observe import metrics

RECONCILE_SECONDS = metrics.histogram(
    "flexjob_operator_reconcile_seconds", "Seconds one reconcile pass took.", ["platform"]
)
ERRORS = metrics.counter(
    "flexjob_operator_errors", "Reconcile passes that raised, by kind.", ["kind"]
)
QUEUE_DEPTH = metrics.gauge("flexjob_operator_queue_depth", "Jobs waiting to be reconciled.")
REPLICAS = metrics.gauge(
    "flexjob_operator_replicas", "Replicas of a job by phase.", ["namespace", "job_name", "phase"]
)


def reconciled(seconds: float, platform: str) -> None:
    RECONCILE_SECONDS.labels(platform).observe(seconds)


def failed(kind: str) -> None:
    ERRORS.labels(kind).inc()


def queue_depth(jobs: int) -> None:
    QUEUE_DEPTH.set(jobs)


def replicas(namespace: str, name: str, observed: Sequence[Replica]) -> None:
    """Replicas of one job by phase (every phase set, so a phase that empties reads 0)."""
    counts = Counter(r.phase for r in observed)
    for phase in ReplicaPhase:
        REPLICAS.labels(namespace, name, phase.value).set(counts.get(phase, 0))
