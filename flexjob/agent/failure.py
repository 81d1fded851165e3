"""A job's root cause: the worker failure that ended it, shared through the master's KV store.

An agent that gives up (restarts used up, or the same failure twice in a row) publishes a
``RootCause`` under a numbered key; every other agent stops its workers once one is there, and
``flexjob run`` prints ``summary()`` of the earliest one (the first process to die; the others
often died of losing it). Not for deciding to restart (the agent does).
"""

from __future__ import annotations

import json
import signal
from dataclasses import asdict, dataclass

from flexjob.api.names import KV_FAILURE_PREFIX, KV_FAILURES
from flexjob.rpc.messages import KVClient


def describe_exit(code: int | None) -> str:
    """``exit code 1`` / ``killed by SIGKILL`` (a Popen return code, negative for signals)."""
    if code is None:
        return "exit code unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


@dataclass(frozen=True, slots=True)
class RootCause:
    node: str
    local_rank: int
    rank: int | None  # global rank in its last world; None when unknown
    exit_code: int | None
    exited_at: float  # wall-clock time the process ended
    why: str  # why the agent gave up
    tail: tuple[str, ...] = ()  # the last lines of its stderr
    #: The error it recorded in its TORCHELASTIC_ERROR_FILE (torch's ``@record``; else the
    #: bootstrap's record of an uncaught exception): ``Type: text``; "" when none.
    error: str = ""

    def to_json(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def from_json(cls, data: bytes) -> RootCause:
        raw = json.loads(data)
        raw["tail"] = tuple(raw.get("tail") or ())
        return cls(**raw)

    def summary(self) -> str:
        rank = f"rank {self.rank}" if self.rank is not None else f"local rank {self.local_rank}"
        lines = [
            "flexjob: job failed — root cause:",
            f"  node {self.node}, {rank} (local rank {self.local_rank}): "
            f"{describe_exit(self.exit_code)}; {self.why}",
        ]
        if self.error:
            lines.append(f"  error: {self.error}")
        if self.tail:
            lines.append("  last lines of its stderr:")
            lines += [f"    {line}" for line in self.tail]
        return "\n".join(lines)


def publish(kv: KVClient, cause: RootCause) -> None:
    n = kv.kv_add(KV_FAILURES, 1)
    kv.kv_set(f"{KV_FAILURE_PREFIX}{n}", cause.to_json())


def _count(kv: KVClient) -> int:
    raw = kv.kv_get(KV_FAILURES)  # read, never kv_add(0): that would create the key
    return int(raw) if raw else 0


def failed(kv: KVClient) -> bool:
    """Whether any agent has given up on this job."""
    return _count(kv) > 0


def root_causes(kv: KVClient) -> list[RootCause]:
    """Every published root cause, the earliest exit first."""
    count = _count(kv)
    found = []
    for n in range(1, count + 1):
        data = kv.kv_get(f"{KV_FAILURE_PREFIX}{n}")
        if data is not None:
            found.append(RootCause.from_json(data))
    return sorted(found, key=lambda c: c.exited_at)
