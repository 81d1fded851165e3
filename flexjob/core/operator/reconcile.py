"""``reconcile``: one job plus what runs for it → the actions to take and the job's new status.

Pure and deterministic: no I/O, time comes in as ``now``. Idempotent: feeding back the returned
status with an observation that reflects the applied actions yields no further actions. Drivers
(kopf handlers, the local loop) call it on every change and apply the actions in order.

The rules: phases and restarts in ``core.operator.phases``; desired replicas and rendering in
``core.operator.replica_plan``. This module walks one round: finished jobs are cleaned up
(``cleanPodPolicy``, ``ttlSecondsAfterFinished``), suspended ones emptied, deadlines enforced,
the ScalePlan folded in (counts; resources per type and ``migratePods`` relaunches, see
``core.operator.replica_resources``), failures restarted or fatal, success detected, and finally
replicas (master first) and their services created or removed to match the desired counts.
"""

from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import count

from flexjob.api import (
    CleanPodPolicy,
    ElasticJob,
    ElasticJobStatus,
    JobPhase,
    ReplicaPhase,
    ReplicaType,
    ScalePlan,
    ScalePlanPhase,
)
from flexjob.api.di_tasks import task_name
from flexjob.api.errors import InvalidSpecError
from flexjob.api.master_rule import master_trigger
from flexjob.api.roles import controlling_type, driving_type, on_request_types, scalable_types
from flexjob.core.operator import phases, tf_cluster
from flexjob.core.operator.actions import (
    Action,
    CreateReplica,
    CreateService,
    DeleteJob,
    DeleteReplica,
    DeleteService,
    EventType,
    ReconcileResult,
    RecordEvent,
    UpdateScalePlan,
)
from flexjob.core.operator.di_task_env import job_peers
from flexjob.core.operator.job_master import (
    JobMasterConfig,
    flexjob_runs_master,
    no_job_master_message,
    with_job_master,
)
from flexjob.core.operator.replica_messages import created_message, failure_message
from flexjob.core.operator.replica_plan import (
    SharedTemplates,
    desired_counts,
    fold_plan,
    follow_spec,
    render_replica,
    replica_types,
    service_port,
    service_request,
)
from flexjob.core.operator.replica_resources import (
    UnknownReplicaError,
    fold_resources,
    oom_memory,
    record_oom_relaunch,
    replica_resources,
    resolve_migrations,
)
from flexjob.core.operator.torch_world import world_leader
from flexjob.core.replicas import Replica, Service, service_name

SUSPENDED_MESSAGE = "job is suspended"
#: Condition reasons of a job that cannot run: its spec, or no job master where it needs one.
INVALID_SPEC = "InvalidSpec"
NO_JOB_MASTER = "NoJobMaster"
_WARNING_PHASES = (JobPhase.FAILED, JobPhase.RESTARTING)


def reconcile(
    job: ElasticJob,
    replicas: Sequence[Replica],
    now: datetime,
    *,
    services: Sequence[Service] = (),
    plan: ScalePlan | None = None,
    job_master: JobMasterConfig | None = None,
    server_url: str | None = None,
) -> ReconcileResult:
    """Decide what to do for ``job`` given the ``replicas`` and ``services`` observed.

    ``plan`` is the oldest ScalePlan of this job not yet Succeeded/Failed (None if none); it is
    folded into ``status.replicas`` and marked Succeeded by an ``UpdateScalePlan`` action.
    Observed objects of other jobs are ignored (never deleted). ``now`` must be timezone-aware.
    With ``job_master``, a job that needs a flexjob job master and declares none gets one
    (``core.operator.job_master``); its success is still decided on its workers. Without it (a
    Kubernetes operator with no ``FLEXJOB_IMAGE``) such a job fails at once, naming the field
    that needs the master (``no_job_master_message``), instead of starting workers that cannot
    find one. ``server_url``: the
    flexjob server, told to the roles of DI-driven jobs (``core.operator.replica_plan.di_env``).
    """
    if now.tzinfo is None:
        raise ValueError("reconcile: now must be timezone-aware (e.g. datetime.now(UTC))")
    trigger = master_trigger(job)
    if job_master is None and trigger is not None:
        message = no_job_master_message(trigger)
        return _Round(job, replicas, services, now).reject(message, NO_JOB_MASTER)
    try:
        effective = with_job_master(job, job_master)
    except ValueError as exc:  # no master can run this spec (InvalidSpecError)
        return _Round(job, replicas, services, now).reject(str(exc))
    return _Round(effective, replicas, services, now, declared=job, server_url=server_url).run(plan)


class _Round:
    """One reconcile pass; accumulates actions and mutates a private copy of the status."""

    def __init__(
        self,
        job: ElasticJob,
        replicas: Sequence[Replica],
        services: Sequence[Service],
        now: datetime,
        declared: ElasticJob | None = None,
        server_url: str | None = None,
    ) -> None:
        self.job = job
        #: The job as stored (without an implicit master): what success is decided on.
        self.declared = declared or job
        self.ns = job.namespace
        self.now = now
        self.status: ElasticJobStatus = (job.status or ElasticJobStatus()).model_copy(deep=True)
        self.own = sorted(
            (r for r in replicas if r.namespace == self.ns and r.job == job.name),
            key=lambda r: (r.type.value, r.index),
        )
        self.services = {
            s.name: s for s in services if s.namespace == self.ns and s.job == job.name
        }
        self.actions: list[Action] = []
        self.deleted: set[str] = set()
        self.deleted_services: set[str] = set()
        self.restarted = ""
        self.changed = False
        self.server_url = server_url
        types = list(job.spec.replica_specs)
        #: DI's coordinator when it drives this job (the phase follows it), else None.
        self.driver = driving_type(types)
        self.on_request = set(on_request_types(types))
        self.tf_addresses: tf_cluster.Addresses | None = None  # once all have services

    # --- the round -------------------------------------------------------------------------
    def run(self, plan: ScalePlan | None) -> ReconcileResult:
        self.status.replica_statuses = phases.replica_statuses(self.own)
        if self.status.phase.finished:
            self._after_finish()
        elif self.job.spec.suspend:
            self._suspend()
        elif self._deadline_passed():
            limit = self.job.spec.active_deadline_seconds
            self._finish(JobPhase.FAILED, "DeadlineExceeded", f"job ran longer than {limit}s")
        else:
            self._progress(plan)
        return ReconcileResult(tuple(self.actions), self.status)

    def reject(self, message: str, reason: str = INVALID_SPEC) -> ReconcileResult:
        """The job fails (once, ``reason``) because it cannot run; finished jobs are cleaned
        up."""
        self.status.replica_statuses = phases.replica_statuses(self.own)
        if self.status.phase.finished:
            self._after_finish()
        else:
            self._finish(JobPhase.FAILED, reason, message)
        return ReconcileResult(tuple(self.actions), self.status)

    def _progress(self, plan: ScalePlan | None) -> None:
        followed = follow_spec(self.job, self.status)  # a spec scaled after a plan wins
        self.status.replicas, self.status.spec_replicas = followed.replicas, followed.spec_replicas
        if plan is not None:
            self._fold_plan(plan)
        if self._handle_failures():
            return
        counts = desired_counts(self.job, self.status)
        if phases.job_succeeded(self.declared, self.own, counts):
            self._finish(JobPhase.SUCCEEDED, "JobSucceeded", self._success_message())
            return
        for r in self._live():
            if r.phase is ReplicaPhase.SUCCEEDED and phases.restarts_on_success(self.job, r.type):
                self._delete(r, "restartPolicy Always")
        master_address = self._master_address()
        self.tf_addresses = tf_cluster.cluster_addresses(self.job, counts, self.services)
        if self.tf_addresses is not None:  # a TensorFlow cluster whose members changed
            for r in tf_cluster.stale_members(self._live(), self.tf_addresses):
                self.changed = True
                self._delete(r, "TF_CONFIG lists another cluster now (its members changed)")
        for rtype in replica_types(self.job):
            self._scale_type(rtype, counts[rtype], master_address)
        self._update_phase(counts)

    # --- helpers: observation ------------------------------------------------------------------
    def _live(self) -> list[Replica]:
        """Owned replicas that are not being deleted (nor deleted in this round)."""
        return [r for r in self.own if not r.deleting and r.name not in self.deleted]

    def _master_type(self) -> ReplicaType | None:
        """The type whose replica 0 every other replica must find first: the master, or a
        plain torch world's rank-0 type (``core.operator.torch_world``); None when there is none."""
        return controlling_type(self.job.spec.replica_specs) or world_leader(self.job)

    def _master_address(self) -> str | None:
        master = self._master_type()
        if master is None:
            return None
        svc = self.services.get(service_name(self.job.name, master, 0))
        return svc.address if svc is not None else None

    def _deadline_passed(self) -> bool:
        limit = self.job.spec.active_deadline_seconds
        if limit is None or self.status.start_time is None:
            return False
        started = phases.parse_timestamp(self.status.start_time)
        return self.now >= started + timedelta(seconds=limit)

    # --- helpers: actions -----------------------------------------------------------------------
    def _event(self, reason: str, message: str, kind: EventType = EventType.NORMAL) -> None:
        self.actions.append(RecordEvent(self.ns, self.job.name, reason, message, kind))

    def _delete(self, replica: Replica, reason: str) -> None:
        if replica.deleting or replica.name in self.deleted:
            return
        self.deleted.add(replica.name)
        self.actions.append(DeleteReplica(self.ns, replica.name, reason))
        self._event("SuccessfulDelete", f"deleted replica {replica.name}: {reason}")

    def _delete_service(self, name: str) -> None:
        if name in self.services and name not in self.deleted_services:
            self.deleted_services.add(name)
            self.actions.append(DeleteService(self.ns, name))

    def _set_phase(self, phase: JobPhase, reason: str, message: str = "") -> None:
        if phases.set_phase(self.status, phase, self.now, reason, message):
            kind = EventType.WARNING if phase in _WARNING_PHASES else EventType.NORMAL
            self._event(reason, message or f"job is {phase.value}", kind)

    # --- finishing ------------------------------------------------------------------------------
    def _success_message(self) -> str:
        declared = self.declared
        master = controlling_type(declared.spec.replica_specs)
        if master is not None and not flexjob_runs_master(declared):
            return f"the {master.value} replica succeeded"
        lead = tf_cluster.lead_type(declared)
        return f"{lead.value} 0 succeeded" if lead else "every worker replica succeeded"

    def _finish(self, phase: JobPhase, reason: str, message: str) -> None:
        self._set_phase(phase, reason, message)
        self.status.completion_time = phases.timestamp(self.now)
        self._cleanup()

    def _cleanup(self) -> None:
        policy = self.job.spec.clean_pod_policy or CleanPodPolicy.RUNNING
        if policy is CleanPodPolicy.NONE:
            return
        for r in self._live():
            if policy is CleanPodPolicy.ALL or r.active:
                self._delete(r, f"cleanPodPolicy {policy.value}")
        # DI Orchestrator deletes every Service of a completed DIJob (its coordinator's too)
        every = policy is CleanPodPolicy.ALL or self.driver is not None
        for name in list(self.services):
            if every or name in self.deleted:
                self._delete_service(name)

    def _after_finish(self) -> None:
        self._cleanup()
        ttl = self.job.spec.ttl_seconds_after_finished
        done = self.status.completion_time
        if ttl is None or done is None:
            return
        if self.now >= phases.parse_timestamp(done) + timedelta(seconds=ttl):
            for r in self._live():
                self._delete(r, "ttlSecondsAfterFinished")
            for name in list(self.services):
                self._delete_service(name)
            self.actions.append(DeleteJob(self.ns, self.job.name))

    def _suspend(self) -> None:
        for r in self._live():
            if r.active:
                self._delete(r, "job suspended")
        self.status.start_time = None
        self._set_phase(JobPhase.PENDING, "Suspended", SUSPENDED_MESSAGE)

    # --- scale plans and failures ---------------------------------------------------------------
    def _fold_plan(self, plan: ScalePlan) -> None:
        done = plan.status is not None and plan.status.phase in (
            ScalePlanPhase.SUCCEEDED,
            ScalePlanPhase.FAILED,
        )
        if done or plan.spec.owner_job != self.job.name or plan.metadata.namespace != self.ns:
            return
        scalable = scalable_types(self.job.spec.replica_specs)
        unknown = [t.value for t in plan.spec.replica_resource_specs if t not in scalable]
        if unknown:
            self._reject_plan(
                plan,
                f"replica type {', '.join(unknown)} cannot be scaled in job {self.job.name} "
                f"(scalable: {', '.join(t.value for t in scalable) or 'none'})",
            )
            return
        counts = desired_counts(self.job, self.status)
        folded = self.status.last_scale_plan == plan.metadata.name
        try:
            migrations = [] if folded else resolve_migrations(self.job, plan, self.own, counts)
        except UnknownReplicaError as exc:
            self._reject_plan(plan, f"migratePods: no replica {exc} in job {self.job.name}")
            return
        try:
            effect = fold_plan(self.job, plan, counts, self._live())
        except InvalidSpecError as exc:  # psHosts naming no PS of this job
            self._reject_plan(plan, str(exc))
            return
        if not folded:  # fold each plan once
            self.status.replicas = {**self.status.replicas, **effect.replicas}
            self.status.last_scale_plan = plan.metadata.name
            fold_resources(self.status, plan, migrations)
            for m in migrations:  # relaunched, not failed: no restart is counted
                if m.replica is not None:
                    self.changed = True
                    self._delete(m.replica, f"migrated by ScalePlan {plan.metadata.name}")
        for r in effect.remove:
            self._delete(r, f"ScalePlan {plan.metadata.name}")
            self._delete_service(r.name)
        wanted = ", ".join(f"{t.value}={n}" for t, n in sorted(self.status.replicas.items()))
        message = f"replicas {wanted}; removed {len(effect.remove)}"
        if migrations:
            message += f"; migrated {', '.join(m.short_name for m in migrations)}"
        self.actions.append(
            UpdateScalePlan(self.ns, plan.metadata.name, ScalePlanPhase.SUCCEEDED, message)
        )
        self._event("ScalePlanApplied", f"ScalePlan {plan.metadata.name}: {message}")

    def _reject_plan(self, plan: ScalePlan, message: str) -> None:
        self.actions.append(
            UpdateScalePlan(self.ns, plan.metadata.name, ScalePlanPhase.FAILED, message)
        )
        self._event("ScalePlanRejected", message, EventType.WARNING)

    def _handle_failures(self) -> bool:
        """Replace failed replicas within backoffLimit; True when the job failed instead."""
        limit = phases.backoff_limit(self.job)
        for r in self._live():
            if r.phase is not ReplicaPhase.FAILED:
                continue
            code = "unknown" if r.exit_code is None else str(r.exit_code)
            if r.type is self.driver:
                message = f"the {r.type.value} replica {r.name} failed with exit code {code}"
                self._finish(JobPhase.FAILED, "CoordinatorFailed", message)
                return True
            if r.type in self.on_request:  # DI v1: recreated; the phase follows the coordinator
                message = f"replica {r.name} failed with exit code {code}; recreating it"
                self._event("ReplicaFailed", message, EventType.WARNING)
                self._delete(r, "replaced after failure")
                continue
            key = r.uid or f"{r.name}@{r.created}"
            if key in self.status.restarted_replicas:
                self._delete(r, "replaced after failure")
                continue
            failed = failure_message(r)
            if not phases.is_retryable(self.job, r):
                policy = phases.restart_policy(self.job, r.type).value
                why = (
                    "the command cannot run; not retried"
                    if r.exit_code in phases.NOT_RUNNABLE_EXIT_CODES
                    else f"restartPolicy {policy}"
                )
                self._finish(JobPhase.FAILED, "ReplicaFailed", f"{failed} ({why})")
                return True
            counted = phases.counts_against_backoff(r.type)
            if counted and self.status.restart_count >= limit:
                message = (
                    f"{failed}; backoffLimit {limit} reached after "
                    f"{self.status.restart_count} restarts"
                )
                self._finish(JobPhase.FAILED, "BackoffLimitExceeded", message)
                return True
            self.status.restart_count += 1 if counted else 0
            self.status.restarted_replicas.append(key)
            self.restarted = f"{failed}; restart {self.status.restart_count} of {limit}"
            grown = oom_memory(self.job, self.status, r)
            if grown is not None:
                record_oom_relaunch(self.status, r, grown)
                self.restarted += f" (OOMKilled: relaunched with {grown} MiB)"
            self._event("ReplicaFailed", self.restarted, EventType.WARNING)
            self._delete(r, "replaced after failure")
        return False

    # --- replicas and services ------------------------------------------------------------------
    def _scale_type(self, rtype: ReplicaType, wanted: int, master_address: str | None) -> None:
        mine = [r for r in self.own if r.type is rtype]
        allocation = self.status.allocation.get(rtype, [])
        for r in self._live():
            if r.type is not rtype or not r.active or r.index >= len(allocation):
                continue
            if r.node is not None and allocation[r.index] and r.node != allocation[r.index]:
                self.changed = True
                self._delete(r, f"rescheduled to node {allocation[r.index]}")
        keep = [r for r in self._live() if r.type is rtype]
        for r in sorted(keep, key=lambda r: r.index, reverse=True)[: max(0, len(keep) - wanted)]:
            self.changed = True
            self._delete(r, "scaled down")
            self._delete_service(r.name)
        occupied = {r.index for r in mine}
        missing = wanted - len(occupied)
        if missing <= 0:
            return
        needs_master = self._master_type() is not None
        free = (i for i in count() if i not in occupied)
        created: list[str] = []
        # made once per resources and task
        shared = SharedTemplates(self.job, rtype)
        spec = self.job.spec.replica_specs[rtype]
        peers = job_peers(self.job, desired_counts(self.job, self.status), self.services)
        for index, _ in zip(free, range(missing), strict=False):
            own_address: str | None = None
            port = service_port(self.job, rtype, index)
            if port is not None:
                svc = self.services.get(service_name(self.job.name, rtype, index))
                if svc is None:
                    self.actions.append(
                        CreateService(service_request(self.job, rtype, index, port))
                    )
                    continue
                own_address = svc.address
            if (needs_master and master_address is None) or peers is False:
                continue
            if self.tf_addresses is None and tf_cluster.in_cluster(self.job, rtype):
                continue  # TF_CONFIG lists the whole cluster: every member's service first
            node = allocation[index] if index < len(allocation) and allocation[index] else None
            resources = replica_resources(self.status, rtype, index)
            template = shared.get(resources, task_name(spec, index), index)
            request = render_replica(
                self.job,
                rtype,
                index,
                master_address=master_address,
                own_address=own_address,
                node=node,
                resources=resources,
                server_url=self.server_url,
                shared=template,
                di_peers=peers if isinstance(peers, list) else None,
                tf_addresses=self.tf_addresses,
            )
            self.actions.append(CreateReplica(request))
            created.append(request.name)
            self.changed = True
        if created:  # one Event per replica type and pass, not one per pod
            self._event("SuccessfulCreate", created_message(rtype, created))

    def _update_phase(self, counts: dict[ReplicaType, int]) -> None:
        prev = self.status.phase
        created = any(isinstance(a, CreateReplica) for a in self.actions)
        if created and self.status.start_time is None:
            self.status.start_time = phases.timestamp(self.now)
        if self.driver is not None:
            self._follow_driver()
            return
        live = self._live()
        ready = (
            not self.actions
            and not any(r.deleting for r in self.own)
            and all(r.phase in (ReplicaPhase.RUNNING, ReplicaPhase.SUCCEEDED) for r in live)
            and all(sum(1 for r in live if r.type is t) >= n for t, n in counts.items())
        )
        if self.restarted:  # its ReplicaFailed event is already recorded: no second one
            phases.set_phase(
                self.status, JobPhase.RESTARTING, self.now, "ReplicaFailed", self.restarted
            )
        elif ready and (live or prev is not JobPhase.PENDING):
            self._set_phase(JobPhase.RUNNING, "AllReplicasReady")
        elif prev in (JobPhase.PENDING, JobPhase.UNKNOWN):
            if created or self.own:
                self._set_phase(JobPhase.STARTING, "ReplicasCreated")
            elif self.status.message == SUSPENDED_MESSAGE:
                self._set_phase(JobPhase.PENDING, "Resumed")
        elif self.changed and prev is JobPhase.RUNNING:
            self._set_phase(JobPhase.RESCHEDULING, "ReplicasChanged")

    def _follow_driver(self) -> None:
        """DI v1: the job is Running while its coordinator runs, Unknown while its state is
        unknown, Starting (DI's Created) once it exists."""
        driver = [r for r in self._live() if r.type is self.driver]
        if any(r.phase is ReplicaPhase.RUNNING for r in driver):
            self._set_phase(JobPhase.RUNNING, "CoordinatorRunning")
        elif any(r.phase is ReplicaPhase.UNKNOWN for r in driver):
            self._set_phase(JobPhase.UNKNOWN, "CoordinatorUnknown")
        elif driver or any(isinstance(a, CreateReplica) for a in self.actions):
            self._set_phase(JobPhase.STARTING, "CoordinatorCreated")
