"""Memory for a replica that ran out of it: relaunch with memory x factor, capped by the limit.

Pure. Not for choosing which replica to relaunch (the master's failure handling does that).
"""

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OomConfig:
    factor: float = 1.5
    #: Memory assumed when the replica's memory was never known (MiB).
    default_memory_mb: float = 1024.0


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
