"""The local operator's liveness lease on a job: who runs the job's operator, and since when.

The operator of a job acquires its lease on start (refused while another live operator holds
it), renews it every round and releases it when it ends. ``flexjob get`` reads it: a job that is
not finished and whose lease is missing, expired or held by a dead process has no operator, and
says so instead of showing a phase nobody maintains. Not here: running the operator
(``flexjob.operator.local.runner``).
"""

import os
import time
from dataclasses import dataclass

from flexjob.api.errors import PlatformError
from flexjob.platform.local import processes
from flexjob.platform.local.db import Database

#: Seconds a lease stays valid without renewal (an operator renews it about every second).
LEASE_SECONDS = 10.0
#: How often a running operator renews its lease.
RENEW_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class OperatorLease:
    holder_pid: int
    renewed: float  # time.time() of the last renewal

    def fresh(self, now: float, duration: float = LEASE_SECONDS) -> bool:
        return now - self.renewed <= duration


class LeaseHeldError(PlatformError, RuntimeError):
    """Another live operator holds the job's lease."""

    def __init__(self, lease: OperatorLease, namespace: str, job: str) -> None:
        super().__init__(
            f"job {namespace}/{job} already has a running operator (pid {lease.holder_pid})"
        )
        self.lease = lease


def holder_alive(lease: OperatorLease | None, now: float) -> bool:
    """Whether ``lease`` is fresh and its holder process still runs."""
    return lease is not None and lease.fresh(now) and processes.alive(lease.holder_pid)


class LeaseStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, namespace: str, job: str) -> OperatorLease | None:
        with self.db.reading() as conn:
            row = conn.execute(
                "SELECT holder_pid, renewed FROM operator_leases WHERE namespace=? AND job=?",
                (namespace, job),
            ).fetchone()
        return None if row is None else OperatorLease(int(row[0]), float(row[1]))

    def acquire(self, namespace: str, job: str) -> OperatorLease:
        """Take the lease for this process; ``LeaseHeldError`` while another live one holds it."""
        me, now = os.getpid(), time.time()
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT holder_pid, renewed FROM operator_leases WHERE namespace=? AND job=?",
                (namespace, job),
            ).fetchone()
            if row is not None:
                held = OperatorLease(int(row[0]), float(row[1]))
                if held.holder_pid != me and holder_alive(held, now):
                    raise LeaseHeldError(held, namespace, job)
            conn.execute(
                "INSERT OR REPLACE INTO operator_leases VALUES (?, ?, ?, ?)",
                (namespace, job, me, now),
            )
        return OperatorLease(me, now)

    def renew(self, namespace: str, job: str) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE operator_leases SET renewed=? WHERE namespace=? AND job=? AND holder_pid=?",
                (time.time(), namespace, job, os.getpid()),
            )

    def release(self, namespace: str, job: str) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "DELETE FROM operator_leases WHERE namespace=? AND job=? AND holder_pid=?",
                (namespace, job, os.getpid()),
            )
