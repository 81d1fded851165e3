"""Job phase rules (DI Orchestrator v2): restart decisions, success, and recording transitions.

Pending → Starting (replicas created) → Running (all ready) → Succeeded (the master, or with no
master every worker, succeeded) | Failed (a failure not retried, or backoffLimit reached, or the
deadline passed). Running → Restarting (a failed replica is replaced) and Running →
Rescheduling (replica count or placement changes), both back to Running once all are ready.
Not here: which replicas exist (``core.operator.replica_plan``). No I/O.
"""

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from flexjob.api import (
    ROLE_TRAITS,
    ElasticJob,
    ElasticJobStatus,
    JobCondition,
    JobPhase,
    ReplicaPhase,
    ReplicaStatus,
    ReplicaType,
    RestartPolicy,
    names,
)
from flexjob.api.roles import controlling_type, success_types
from flexjob.core.operator.job_master import flexjob_runs_master
from flexjob.core.operator.tf_cluster import lead_type as tf_lead_type
from flexjob.core.replicas import Replica

DEFAULT_BACKOFF_LIMIT = 3
DEFAULT_RESTART_POLICY = RestartPolicy.ON_FAILURE
#: Exit codes of a command that cannot run at all (126: not executable, 127: not found — the
#: shell's codes; ``flexjob agent`` exits 127 for a missing script, the local platform records
#: 127 for a command it cannot start). Restarting cannot fix them: never retried, whatever the
#: restart policy, unless an ExitCode policy's ``restartExitCodes`` lists them.
NOT_RUNNABLE_EXIT_CODES = (126, 127)


def restart_policy(job: ElasticJob, rtype: ReplicaType) -> RestartPolicy:
    spec = job.spec.replica_specs.get(rtype)
    if spec is None or spec.restart_policy is None:
        return DEFAULT_RESTART_POLICY
    return spec.restart_policy


def counts_against_backoff(rtype: ReplicaType) -> bool:
    return ROLE_TRAITS[rtype].counts_against_backoff


def backoff_limit(job: ElasticJob) -> int:
    limit = job.spec.backoff_limit
    return DEFAULT_BACKOFF_LIMIT if limit is None else limit


def is_retryable(job: ElasticJob, replica: Replica) -> bool:
    """Whether a failed replica may be replaced, by its type's restart policy.

    ExitCode retries the codes in ``restartExitCodes``; without that list, codes above 128
    (killed by a signal) and unknown codes are retried and 1-127 are permanent (Kubeflow's rule).
    ``NOT_RUNNABLE_EXIT_CODES`` are never retried unless ``restartExitCodes`` lists them.
    """
    policy = restart_policy(job, replica.type)
    if policy is RestartPolicy.NEVER:
        return False
    code = replica.exit_code
    if policy is RestartPolicy.EXIT_CODE:
        codes = job.spec.replica_specs[replica.type].restart_exit_codes
        if codes is not None:
            return code in codes
        return code is None or code < 0 or code > 128
    return code not in NOT_RUNNABLE_EXIT_CODES


def restarts_on_success(job: ElasticJob, rtype: ReplicaType) -> bool:
    return restart_policy(job, rtype) is RestartPolicy.ALWAYS


def job_succeeded(
    job: ElasticJob, replicas: Sequence[Replica], counts: Mapping[ReplicaType, int]
) -> bool:
    """The controlling replica (the master) succeeded; or, with none (or one flexjob runs:
    ``core.operator.job_master``), every replica of its ``success_types`` succeeded (all the
    desired ones: the training types; every type in a DIJob v2 or a job with no training type);
    in a TensorFlow cluster its chief, else worker 0 (``core.operator.tf_cluster``).
    Roles:
    ``api.roles``."""
    master = controlling_type(job.spec.replica_specs)
    if master is not None and not flexjob_runs_master(job):
        return any(r.type is master and r.phase is ReplicaPhase.SUCCEEDED for r in replicas)
    lead = tf_lead_type(job)  # a TensorFlow cluster: its chief, else worker 0
    if lead is not None:
        return any(
            r.type is lead and r.index == 0 and r.phase is ReplicaPhase.SUCCEEDED for r in replicas
        )
    workers = success_types(counts)
    if not workers or all(counts[t] == 0 for t in workers):
        return False
    for rtype in workers:
        own = [r for r in replicas if r.type is rtype]
        done = [r for r in own if r.phase is ReplicaPhase.SUCCEEDED]
        if len(done) < counts[rtype] or len(done) < len(own):
            return False
    return True


def pods_selector(job: str, rtype: ReplicaType) -> str:
    """The label selector of ``job``'s pods of ``rtype`` (the status's ``selector``)."""
    return f"{names.LABEL_JOB_NAME}={job},{names.LABEL_REPLICA_TYPE}={rtype.value}"


def replica_statuses(replicas: Sequence[Replica]) -> dict[ReplicaType, ReplicaStatus]:
    out: dict[ReplicaType, ReplicaStatus] = {}
    for r in replicas:
        st = out.setdefault(r.type, ReplicaStatus(selector=pods_selector(r.job, r.type)))
        if r.phase is ReplicaPhase.RUNNING:
            st.active += 1
        elif r.phase is ReplicaPhase.SUCCEEDED:
            st.succeeded += 1
        elif r.phase is ReplicaPhase.FAILED:
            st.failed += 1
        else:
            st.pending += 1
    return out


def timestamp(now: datetime) -> str:
    """RFC 3339 in UTC with a Z (microseconds kept); ``now`` must be timezone-aware."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_timestamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def set_phase(
    status: ElasticJobStatus, phase: JobPhase, now: datetime, reason: str, message: str
) -> bool:
    """Move ``status`` to ``phase`` with a condition; False (nothing changed) if already there."""
    if status.phase is phase and status.message == message:
        return False
    stamp = timestamp(now)
    status.phase = phase
    status.message = message
    for cond in status.conditions:
        if cond.type is not phase and cond.status == "True":
            cond.status = "False"
            cond.last_update_time = stamp
    for cond in status.conditions:
        if cond.type is phase:
            cond.status = "True"
            cond.reason = reason
            cond.message = message
            cond.last_transition_time = stamp
            cond.last_update_time = stamp
            break
    else:
        status.conditions.append(
            JobCondition(
                type=phase,
                reason=reason,
                message=message,
                last_transition_time=stamp,
                last_update_time=stamp,
            )
        )
    return True
