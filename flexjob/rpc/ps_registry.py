"""Where the PS replicas of a job serve: published to, and read from, the job master.

Each ``flexjob ps`` replica publishes its address under ``KV_PS_ADDRESS_PREFIX + index`` in
the master's KV store (again every few seconds, so a restarted master learns it back);
trainers and agents read the whole set. Beside it each PS publishes its dense version and
the embedding rows pushed since its last checkpoint, so a relaunched PS that restored that
checkpoint counts what it lost (``report_restore``: summed under ``KV_PS_LOST_UPDATES`` and
``KV_PS_LOST_ROWS``, and a failure in the master's stats of node ``ps-<index>``). Each PS
also publishes its membership (``publish_member``) and the master's PS-set driver publishes
the set trainers use (``KV_PS_SET``); ``read_members`` and ``read_set`` read them through any
KV getter (a ``MasterClient``'s or the master's own).
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

from flexjob.api import names
from flexjob.core.ps.set_change import PsMember, PsSetInfo
from flexjob.rpc.client import MasterClient

KvGet = Callable[[str], bytes | None]
#: ``read_members`` stops after this many PS indexes in a row with no member.
MEMBER_SCAN_GAP = 4


def publish_ps(
    master: MasterClient, index: int, address: str, version: int, dirty_rows: int = 0
) -> None:
    """Publish where PS ``index`` serves, its dense version and the embedding rows it would
    lose if it died now (``dirty_rows``: pushed since its last checkpoint)."""
    master.kv_set(f"{names.KV_PS_ADDRESS_PREFIX}{index}", address.encode())
    master.kv_set(f"{names.KV_PS_VERSION_PREFIX}{index}", str(version).encode())
    master.kv_set(f"{names.KV_PS_DIRTY_ROWS_PREFIX}{index}", str(dirty_rows).encode())


def publish_member(master: MasterClient, index: int, member: PsMember) -> None:
    master.kv_set(f"{names.KV_PS_MEMBER_PREFIX}{index}", member.to_json())


def read_members(get: KvGet) -> dict[int, PsMember]:
    """Every PS member published, by index (scanning up from 0 until a gap)."""
    found: dict[int, PsMember] = {}
    index, gap = 0, 0
    while gap < MEMBER_SCAN_GAP:
        raw = get(f"{names.KV_PS_MEMBER_PREFIX}{index}")
        if raw:
            found[index] = PsMember.from_json(raw)
            gap = 0
        else:
            gap += 1
        index += 1
    return found


def read_set(get: KvGet) -> PsSetInfo | None:
    """The PS set the master published last; ``None`` before the first."""
    raw = get(names.KV_PS_SET)
    return PsSetInfo.from_json(raw) if raw else None


@dataclass(frozen=True, slots=True)
class Lost:
    """What a relaunched PS lost by restoring its checkpoint (lower bounds: the PS before it
    published every few seconds)."""

    dense_updates: int
    rows: int


def report_restore(master: MasterClient, index: int, restored_version: int) -> Lost:
    """Count, in the master, what PS ``index`` lost by restoring a checkpoint at
    ``restored_version``: the dense updates (the version it last published minus that) and
    the embedding rows pushed since its last checkpoint (the count it last published),
    summed under ``KV_PS_LOST_UPDATES`` / ``KV_PS_LOST_ROWS`` and as a failure of node
    ``ps-<index>`` in the master's stats."""
    published = master.kv_get(f"{names.KV_PS_VERSION_PREFIX}{index}") or b"0"
    lost = max(0, int(published.decode() or 0) - restored_version)
    total = master.kv_add(names.KV_PS_LOST_UPDATES, lost)
    dirty = master.kv_get(f"{names.KV_PS_DIRTY_ROWS_PREFIX}{index}") or b"0"
    rows = max(0, int(dirty.decode() or 0))
    rows_total = master.kv_add(names.KV_PS_LOST_ROWS, rows)
    master.kv_set(f"{names.KV_PS_DIRTY_ROWS_PREFIX}{index}", b"0")  # counted once
    master.report_failure(
        f"ps {index} relaunched and restored its checkpoint at dense version "
        f"{restored_version}; {lost} dense updates since then lost ({total} in this job), "
        f"{rows} embedding rows' pushes lost ({rows_total} in this job)"
    )
    return Lost(lost, rows)


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
