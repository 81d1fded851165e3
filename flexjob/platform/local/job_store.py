"""The local job store: jobs, ScalePlans and events as rows of the SQLite file.

Jobs and plans are stored as their JSON wire form, status in its own column so a status patch
never overwrites a spec. Not here: replicas and processes (``runtime.py``).
"""

import sqlite3
import time
import uuid
from datetime import UTC, datetime

from flexjob.api import ElasticJob, ElasticJobStatus, ScalePlan, ScalePlanStatus
from flexjob.api.name_rules import check_name, check_path_part
from flexjob.core.operator.actions import EventType
from flexjob.core.operator.phases import timestamp
from flexjob.core.operator.status_patch import (
    StatusPatch,
    apply_status_patch,
    normalize_status_patch,
)
from flexjob.platform.contract import AlreadyExistsError, Event, NotFoundError
from flexjob.platform.local.db import Database


def _job_from_row(body: str, status: str, version: int) -> ElasticJob:
    job = ElasticJob.model_validate_json(body)
    job.status = ElasticJobStatus.model_validate_json(status)
    job.metadata.resource_version = str(version)
    return job


def _plan_from_row(body: str, status: str, version: int) -> ScalePlan:
    plan = ScalePlan.model_validate_json(body)
    plan.status = ScalePlanStatus.model_validate_json(status)
    plan.metadata.resource_version = str(version)
    return plan


def _one_job(conn: sqlite3.Connection, namespace: str, name: str) -> ElasticJob:
    row = conn.execute(
        "SELECT body, status, version FROM jobs WHERE namespace=? AND name=?", (namespace, name)
    ).fetchone()
    if row is None:
        raise NotFoundError(f"job {namespace}/{name} not found")
    return _job_from_row(*row)


class LocalJobStore:
    """Jobs, ScalePlans and events of the local platform (its ``JobStore`` side)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # --- jobs ----------------------------------------------------------------------------------
    def create_job(self, job: ElasticJob) -> ElasticJob:
        check_name("metadata.namespace", job.namespace)  # its folder is named for it
        check_name("metadata.name", job.name)
        if job.metadata.uid:  # kept: its master's state folder is named for it
            check_path_part("metadata.uid", job.metadata.uid)
        job = job.model_copy(deep=True)
        status = job.status or ElasticJobStatus()
        job.status = None
        job.metadata.uid = job.metadata.uid or str(uuid.uuid4())
        job.metadata.generation = 1
        job.metadata.creation_timestamp = timestamp(datetime.now(UTC))
        with self.db.transaction() as conn:
            found = conn.execute(
                "SELECT 1 FROM jobs WHERE namespace=? AND name=?", (job.namespace, job.name)
            ).fetchone()
            if found:
                raise AlreadyExistsError(f"job {job.namespace}/{job.name} already exists")
            conn.execute(
                "INSERT INTO jobs VALUES (?, ?, ?, ?, 1, ?)",
                (
                    job.namespace,
                    job.name,
                    job.model_dump_json(by_alias=True, exclude_none=True),
                    status.model_dump_json(by_alias=True),
                    time.time(),
                ),
            )
        return self.get_job(job.namespace, job.name)

    def get_job(self, namespace: str, name: str) -> ElasticJob:
        with self.db.reading() as conn:
            return _one_job(conn, namespace, name)

    def list_jobs(self, namespace: str | None = None) -> list[ElasticJob]:
        query = "SELECT body, status, version FROM jobs"
        args: tuple[str, ...] = ()
        if namespace is not None:
            query += " WHERE namespace=?"
            args = (namespace,)
        with self.db.reading() as conn:
            rows = conn.execute(query + " ORDER BY created", args).fetchall()
        return [_job_from_row(*row) for row in rows]

    def patch_job_status(self, namespace: str, name: str, patch: StatusPatch) -> ElasticJob:
        """Merge ``patch`` into the stored status: read, merge and write in one ``BEGIN
        IMMEDIATE`` transaction, so concurrent patches (from any process) serialise."""
        wire = normalize_status_patch(patch)
        with self.db.transaction() as conn:
            job = _one_job(conn, namespace, name)
            job.status = apply_status_patch(job.status, wire)
            if wire:
                conn.execute(
                    "UPDATE jobs SET status=?, version=version+1 WHERE namespace=? AND name=?",
                    (job.status.model_dump_json(by_alias=True), namespace, name),
                )
                job.metadata.resource_version = str(int(job.metadata.resource_version or 0) + 1)
        return job

    def delete_job(self, namespace: str, name: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM jobs WHERE namespace=? AND name=?", (namespace, name))
            conn.execute("DELETE FROM scale_plans WHERE namespace=? AND job=?", (namespace, name))
            conn.execute("DELETE FROM events WHERE namespace=? AND job=?", (namespace, name))
            conn.execute(
                "DELETE FROM operator_leases WHERE namespace=? AND job=?", (namespace, name)
            )

    # --- scale plans ---------------------------------------------------------------------------
    def create_scale_plan(self, plan: ScalePlan) -> ScalePlan:
        plan = plan.model_copy(deep=True)
        status = plan.status or ScalePlanStatus(create_time=timestamp(datetime.now(UTC)))
        plan.status = None
        plan.metadata.uid = plan.metadata.uid or str(uuid.uuid4())
        plan.metadata.creation_timestamp = timestamp(datetime.now(UTC))
        ns, name = plan.metadata.namespace, plan.metadata.name
        with self.db.transaction() as conn:
            if conn.execute(
                "SELECT 1 FROM scale_plans WHERE namespace=? AND name=?", (ns, name)
            ).fetchone():
                raise AlreadyExistsError(f"ScalePlan {ns}/{name} already exists")
            conn.execute(
                "INSERT INTO scale_plans VALUES (?, ?, ?, ?, ?, 1, ?)",
                (
                    ns,
                    name,
                    plan.spec.owner_job,
                    plan.model_dump_json(by_alias=True, exclude_none=True),
                    status.model_dump_json(by_alias=True),
                    time.time(),
                ),
            )
        return self._get_plan(ns, name)

    def _get_plan(self, namespace: str, name: str) -> ScalePlan:
        with self.db.reading() as conn:
            row = conn.execute(
                "SELECT body, status, version FROM scale_plans WHERE namespace=? AND name=?",
                (namespace, name),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"ScalePlan {namespace}/{name} not found")
        return _plan_from_row(*row)

    def list_scale_plans(self, namespace: str | None, job: str | None = None) -> list[ScalePlan]:
        query = "SELECT body, status, version FROM scale_plans WHERE 1=1"
        args: list[str] = []
        if namespace is not None:
            query += " AND namespace=?"
            args.append(namespace)
        if job is not None:
            query += " AND job=?"
            args.append(job)
        with self.db.reading() as conn:
            rows = conn.execute(query + " ORDER BY created", args).fetchall()
        return [_plan_from_row(*row) for row in rows]

    def patch_scale_plan_status(
        self, namespace: str, name: str, status: ScalePlanStatus
    ) -> ScalePlan:
        with self.db.transaction() as conn:
            cur = conn.execute(
                "UPDATE scale_plans SET status=?, version=version+1 WHERE namespace=? AND name=?",
                (status.model_dump_json(by_alias=True), namespace, name),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"ScalePlan {namespace}/{name} not found")
        return self._get_plan(namespace, name)

    # --- events --------------------------------------------------------------------------------
    def record_event(
        self, namespace: str, job: str, reason: str, message: str, type: EventType
    ) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO events (namespace, job, type, reason, message, time) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (namespace, job, type.value, reason, message, time.time()),
            )

    def list_events(self, namespace: str, job: str) -> list[Event]:
        with self.db.reading() as conn:
            rows = conn.execute(
                "SELECT type, reason, message, time FROM events WHERE namespace=? AND job=? "
                "ORDER BY id",
                (namespace, job),
            ).fetchall()
        return [
            Event(namespace, job, reason, message, EventType(kind), datetime.fromtimestamp(t, UTC))
            for kind, reason, message, t in rows
        ]
