"""One scheduling round: the rules every driver applies around a policy.

For: combining a policy's answers with the guarantees the Allocator makes — non-preemptible
jobs get exactly their replica count once and are never moved; new jobs are placed with
``allocate`` (highest priority, then oldest first; among equals, more GPUs per replica first);
every period, preemptible jobs are re-planned with ``optimize``
on what the non-preemptible ones leave; a policy answer that breaks the contract is rejected
(``PolicyError``). Not for: reading or writing jobs (the live Allocator and the simulator do).
"""

import logging
from collections.abc import Mapping, Sequence

from flexjob.core.allocator.contract import Allocations, JobInfo, NodeInfo, Policy
from flexjob.core.allocator.placement import FreeMap, check_allocations

log = logging.getLogger(__name__)


def _nodes_of(free: FreeMap) -> list[NodeInfo]:
    return [NodeInfo(name, free.free(name)) for name in free.names]


def schedule_round(
    policy: Policy,
    jobs: Sequence[JobInfo],
    nodes: Sequence[NodeInfo],
    previous: Mapping[str, Sequence[str]],
    *,
    optimize: bool,
) -> Allocations:
    """New allocations for ``jobs``; ``nodes`` are free of all of ``jobs`` (not of others).

    With ``optimize=False`` only jobs without an allocation are placed; running ones keep theirs
    (unless their nodes are gone or shrank: then they are placed afresh). Raises
    ``PolicyError`` when the policy overcommits a node or breaks a job's bounds.
    """
    free = FreeMap(nodes)
    result: Allocations = {}
    fixed = [job for job in jobs if not job.preemptible]
    elastic = [job for job in jobs if job.preemptible]
    # Running jobs that stay where they are: all non-preemptible, and preemptible between periods.
    keep = [job for job in (fixed if optimize else jobs) if previous.get(job.id)]
    for job in keep:
        kept = list(previous[job.id])
        if free.fits(kept, job.resources):  # else (a node left or shrank): placed afresh below
            free.take(kept, job.resources)
            result[job.id] = kept
        else:
            log.info("previous allocation of %s no longer fits its nodes; re-placing it", job.id)
    new = [j for j in jobs if j.id not in result and (not optimize or not j.preemptible)]
    # Highest priority, then oldest; among equals (the tasks of one job) the scarcest first.
    for job in sorted(new, key=lambda j: (-j.priority, -j.age, -j.resources.gpu, j.id)):
        allocation = list(policy.allocate(job, _nodes_of(free)))
        _check_one(job, free, allocation)
        free.take(allocation, job.resources)
        result[job.id] = allocation
    if optimize and elastic:
        prev = {job.id: list(previous.get(job.id, ())) for job in elastic}
        planned = policy.optimize(elastic, _nodes_of(free), prev)
        planned = {job.id: list(planned.get(job.id, ())) for job in elastic}
        check_allocations(elastic, _nodes_of(free), planned)
        result.update(planned)
    return result


def _check_one(job: JobInfo, free: FreeMap, allocation: Sequence[str]) -> None:
    check_allocations([job], _nodes_of(free), {job.id: allocation})


def changed_jobs(
    previous: Mapping[str, Sequence[str]], current: Mapping[str, Sequence[str]]
) -> set[str]:
    """Ids whose allocation differs (a running job that changes pays a restart)."""
    ids = set(previous) | set(current)
    return {i for i in ids if list(previous.get(i, ())) != list(current.get(i, ()))}
