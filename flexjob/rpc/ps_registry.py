"""Where the PS replicas of a job serve: published to, and read from, the job master.

Each ``flexjob ps`` replica publishes its address under ``KV_PS_ADDRESS_PREFIX + index`` in
the master's KV store (again every few seconds, so a restarted master learns it back);
trainers and agents read the whole set. Not for PS elasticity's set versions (issue 15).
"""

import time

from flexjob.api import names
from flexjob.rpc.client import MasterClient


def publish_ps(master: MasterClient, index: int, address: str) -> None:
    master.kv_set(f"{names.KV_PS_ADDRESS_PREFIX}{index}", address.encode())


def resolve_ps(
    master: MasterClient, num_ps: int, timeout: float = 120.0, poll: float = 0.1
) -> list[str]:
    """The addresses of PS ``0 .. num_ps-1``, waiting until every one has published;
    ``TimeoutError`` naming the missing ones after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    found: dict[int, str] = {}
    while True:
        for index in range(num_ps):
            if index not in found:
                value = master.kv_get(f"{names.KV_PS_ADDRESS_PREFIX}{index}")
                if value:
                    found[index] = value.decode()
        if len(found) == num_ps:
            return [found[i] for i in range(num_ps)]
        if time.monotonic() >= deadline:
            missing = sorted(set(range(num_ps)) - set(found))
            raise TimeoutError(f"PS replicas {missing} did not register within {timeout}s")
        time.sleep(poll)
