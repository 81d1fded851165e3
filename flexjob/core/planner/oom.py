"""Memory for a replica that ran out of it: relaunch with memory x factor, capped by the limit;
and which failure texts mean "out of memory".

Pure. One rule for every caller: the master's planner (an OOM reported by an agent) and the
operator's reconcile (a replica the platform reports ``OOMKilled``, Kubernetes or local:
``core.operator.replica_resources.oom_memory``). Not for choosing which replica to relaunch.
"""

import math
import re
from dataclasses import dataclass

#: Failure texts that mean "ran out of memory": Kubernetes' and flexjob's ``OOMKilled``, exit
#: code 137 with it, Python's ``MemoryError`` and the C library's ENOMEM message.
OOM_PATTERN = re.compile(
    r"\boom|out of memory|outofmemory|exit code 137|\bMemoryError\b|cannot allocate memory",
    re.IGNORECASE,
)


def mentions_oom(text: str) -> bool:
    """Whether a failure's text says it ran out of memory."""
    return OOM_PATTERN.search(text) is not None


@dataclass(frozen=True, slots=True)
class OomConfig:
    factor: float = 1.5
    #: Memory assumed when the replica's memory was never known (MiB).
    default_memory_mb: float = 1024.0
    #: An OOM relaunch never gives a replica more than this many times the memory its spec
    #: declares (the operator's bound; the master's planner is bound by the job's limits).
    max_growth: float = 4.0


def plan_oom_memory(
    memory_mb: float | None, cap_mb: float | None, config: OomConfig | None = None
) -> float | None:
    """New memory in MiB, or ``None`` when the replica already has the cap (nothing to gain)."""
    config = config or OomConfig()
    current = memory_mb if memory_mb else config.default_memory_mb
    new = float(math.ceil(current * config.factor))
    if cap_mb is not None:
        if current >= cap_mb:
            return None
        new = min(new, cap_mb)
    return new
