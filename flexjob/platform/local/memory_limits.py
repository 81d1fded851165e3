"""A local replica's memory limit: enforced for real, and an OOM kill told apart afterwards.

The limit is the main container's ``resources.limits.memory`` (what a kubelet enforces; a
ScalePlan's or an OOM relaunch's resources set it, ``core.operator.replica_resources``). A replica
with one runs in its own memory cgroup when cgroups can be made here (``platform.cgroups``): the
kernel's OOM killer ends its biggest process when it goes over, and its exit-code wrapper
records ``OOMKilled`` (``processes.EXIT_WRAPPER``). Elsewhere every process of the replica gets
an ``RLIMIT_AS`` of the limit instead: an allocation past it fails (``MemoryError`` in Python),
and a replica that then failed with an out-of-memory message (``core.planner.oom``) reads
``OOMKilled`` too. What was applied is kept beside the exit file (``<uid>.limit``) so that any
process (a restarted operator) can judge the exit and remove the cgroup. Not here: starting
processes (``processes.py``) or the rows (``runtime.py``).
"""

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path

from flexjob.api import PodTemplateSpec
from flexjob.api.quantity import parse_quantity
from flexjob.core.planner.oom import mentions_oom
from flexjob.core.replicas import OOM_KILLED
from flexjob.platform.cgroups import CgroupRoot, MemoryCgroup
from flexjob.platform.local import processes

log = logging.getLogger(__name__)

_CGROUP, _RLIMIT = "cgroup", "rlimit"


def memory_limit_bytes(template: PodTemplateSpec) -> int | None:
    """The main container's ``limits.memory`` in bytes; None when it has none (or a bad one)."""
    if not template.spec.containers:
        return None
    value = template.spec.containers[0].resources.limits.get("memory")
    if value is None:
        return None
    try:
        return int(parse_quantity(value))
    except ValueError:
        log.warning("replica memory limit %r is not a quantity: not enforced", value)
        return None


@dataclass(frozen=True, slots=True)
class Enforcement:
    """How one replica's limit is enforced: in ``cgroup``, or by an ``RLIMIT_AS`` of
    ``rlimit_bytes``; neither when it has no limit."""

    cgroup: MemoryCgroup | None = None
    rlimit_bytes: int | None = None


def _record(exit_file: Path) -> Path:
    return exit_file.with_name(exit_file.name + ".limit")


def enforce(limit: int | None, exit_file: Path, uid: str) -> Enforcement:
    """Prepare the limit of a replica about to start (its exit file names its records)."""
    if limit is None:
        return Enforcement()
    exit_file.parent.mkdir(parents=True, exist_ok=True)
    cgroup = CgroupRoot(own_dir=False).container(f"flexjob-replica-{uid}", limit)
    if cgroup is not None:
        _record(exit_file).write_text(f"{_CGROUP} {cgroup.directory}\n")
        return Enforcement(cgroup=cgroup)
    _record(exit_file).write_text(f"{_RLIMIT} {limit}\n")
    return Enforcement(rlimit_bytes=limit)


def _read(exit_file: Path) -> tuple[str, str]:
    with contextlib.suppress(OSError, ValueError):
        kind, value = _record(exit_file).read_text().split(maxsplit=1)
        return kind, value.strip()
    return "", ""


def exit_reason(exit_file: Path, failed: bool, output_tail: str) -> str:
    """``OOMKilled`` when the replica ended over its limit, else what its wrapper recorded."""
    reason = processes.read_reason(exit_file)
    if reason:
        return reason
    kind, _ = _read(exit_file)
    if failed and kind == _RLIMIT and mentions_oom(output_tail):
        return OOM_KILLED
    return ""


def release(exit_file: Path) -> None:
    """Remove the replica's cgroup (killing what is left in it); nothing when it had none."""
    kind, value = _read(exit_file)
    if kind == _CGROUP:
        MemoryCgroup.existing(Path(value)).remove()
