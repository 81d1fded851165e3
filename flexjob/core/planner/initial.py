"""The first plan of a job: copied from similar finished jobs, else the job's own default.

Similar means the same model or dataset name, ranked model > dataset > user; the best-ranked
group's most recent successful jobs vote (median replicas and CPU; peak memory plus headroom).
Pure. Not for plans of running jobs (see ``throughput``, ``hot_ps``, ``oom``).
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import median

from flexjob.api import ReplicaType
from flexjob.api.bounds import clamp
from flexjob.api.roles import PS_TYPE, job_training_type
from flexjob.core.planner.stats import FinishedJob, JobLimits, JobProfile, ReplicaResources


@dataclass(frozen=True, slots=True)
class InitialPlanConfig:
    #: How many recent similar jobs vote.
    max_jobs: int = 5
    #: Memory headroom over the peak memory seen in similar jobs.
    memory_headroom: float = 1.2


def similarity(a: JobProfile, b: JobProfile) -> int:
    """0 when unrelated; higher is closer. Model counts most, then dataset, then user."""
    score = 0
    if a.model and a.model == b.model:
        score += 4
    if a.dataset and a.dataset == b.dataset:
        score += 2
    if score and a.user and a.user == b.user:
        score += 1
    return score


def similar_jobs(
    profile: JobProfile, history: Sequence[FinishedJob], config: InitialPlanConfig
) -> list[FinishedJob]:
    """The most similar successful finished jobs, most recent first."""
    scored = [(similarity(profile, j.profile), j) for j in history if j.succeeded]
    best = max((s for s, _ in scored), default=0)
    if best == 0:
        return []
    group = [j for s, j in scored if s == best]
    group.sort(key=lambda j: -j.finished_at)
    return group[: config.max_jobs]


def _vote(
    rtype: ReplicaType, jobs: Sequence[FinishedJob], config: InitialPlanConfig
) -> ReplicaResources | None:
    specs = [j.resources[rtype] for j in jobs if rtype in j.resources]
    if not specs:
        return None
    replicas = math.ceil(median(s.replicas for s in specs))
    cpus = [s.cpu for s in specs if s.cpu is not None]
    peaks = [j.peak_memory_mb[rtype] for j in jobs if rtype in j.peak_memory_mb]
    mems = [s.memory_mb for s in specs if s.memory_mb is not None]
    memory = None
    if peaks:
        memory = float(math.ceil(max(peaks) * config.memory_headroom))
    elif mems:
        memory = float(median(mems))
    return ReplicaResources(replicas, float(median(cpus)) if cpus else None, memory)


def _clamp(
    rtype: ReplicaType, trainer: ReplicaType, res: ReplicaResources, limits: JobLimits
) -> ReplicaResources:
    replicas = res.replicas
    if rtype is trainer:
        replicas = limits.clamp_replicas(replicas)
    if rtype is PS_TYPE:
        replicas = clamp(replicas, 0, limits.max_ps)
    cpu, mem = res.cpu, res.memory_mb
    if cpu is not None and limits.max_cpu is not None:
        cpu = min(cpu, limits.max_cpu)
    if mem is not None and limits.max_memory_mb is not None:
        mem = min(mem, limits.max_memory_mb)
    return replace(res, replicas=replicas, cpu=cpu, memory_mb=mem)


def plan_initial(
    profile: JobProfile,
    default: Mapping[ReplicaType, ReplicaResources],
    history: Sequence[FinishedJob],
    limits: JobLimits,
    config: InitialPlanConfig | None = None,
) -> tuple[dict[ReplicaType, ReplicaResources], list[str]]:
    """Resources per replica type, and the names of the jobs they were copied from."""
    config = config or InitialPlanConfig()
    jobs = similar_jobs(profile, history, config)
    plan: dict[ReplicaType, ReplicaResources] = {}
    rtypes = set(default) or {t for j in jobs for t in j.resources}
    trainer = job_training_type(rtypes)
    for rtype in sorted(rtypes):
        voted = _vote(rtype, jobs, config)
        res = voted if voted is not None else default.get(rtype)
        if res is not None:
            plan[rtype] = _clamp(rtype, trainer, res, limits)
    return plan, [j.profile.name for j in jobs]
