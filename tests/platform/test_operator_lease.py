"""The local operator's liveness lease: one live operator per job; a lease that stopped being
renewed, or whose holder died, reads as no operator and may be taken over."""

import os
import time
from pathlib import Path

import pytest

from flexjob.platform.local import LocalPlatform
from flexjob.platform.local.leases import LEASE_SECONDS, LeaseHeldError, holder_alive


def _held_by(platform: LocalPlatform, pid: int, renewed: float) -> None:
    with platform.db.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO operator_leases VALUES (?, ?, ?, ?)",
            ("default", "job", pid, renewed),
        )


def test_a_fresh_lease_of_a_live_operator_is_not_taken_over(tmp_path: Path) -> None:
    platform = LocalPlatform(tmp_path)
    _held_by(platform, os.getppid(), time.time())
    with pytest.raises(LeaseHeldError, match=f"running operator \\(pid {os.getppid()}\\)"):
        platform.leases.acquire("default", "job")


def test_a_lease_not_renewed_in_time_reads_as_no_operator_and_is_taken_over(
    tmp_path: Path,
) -> None:
    platform = LocalPlatform(tmp_path)
    _held_by(platform, os.getppid(), time.time() - LEASE_SECONDS - 1)
    assert not holder_alive(platform.leases.get("default", "job"), time.time())
    lease = platform.leases.acquire("default", "job")
    assert lease.holder_pid == os.getpid()
    assert holder_alive(platform.leases.get("default", "job"), time.time())
    platform.leases.release("default", "job")
    assert platform.leases.get("default", "job") is None


def test_deleting_the_job_drops_its_lease(tmp_path: Path) -> None:
    platform = LocalPlatform(tmp_path)
    platform.leases.acquire("default", "job")
    platform.delete_job("default", "job")
    assert platform.leases.get("default", "job") is None
