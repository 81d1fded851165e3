"""The shape both generated workloads share: 160 jobs over eight hours, each of a known kind,
at least five kinds, the same jobs from the same seed."""

from collections import Counter
from collections.abc import Callable, Collection

from flexjob.scheduler.trace import TraceJob


def day_of_jobs(
    generate: Callable[[], list[TraceJob]], kinds: Collection[str]
) -> tuple[list[TraceJob], Counter[str]]:
    """The jobs ``generate`` makes, asserted to have that shape with names in ``kinds``; and
    how many there are of each kind."""
    jobs = generate()
    assert len(jobs) == 160 and generate() == jobs
    assert all(0.0 <= j.submit_time <= 8 * 3600.0 for j in jobs)
    counts = Counter(j.id.split("-")[0] for j in jobs)
    assert set(counts) <= set(kinds) and len(counts) >= 5
    return jobs, counts
