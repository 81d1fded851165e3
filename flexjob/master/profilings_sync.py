"""Copies the goodput profilings a job's trainers publish into the job's ``status.profilings``.

The trainer helpers (``trainer.goodput``) measure step times per shape and the gradient noise
scale and publish them, as one JSON document, under ``names.KV_PROFILINGS`` in the master's KV
store. The Allocator reads ``status.profilings`` (``scheduler.profilings``). This module is the
bridge: on each tick, when the document changed since the last copy, the master merges it into
the job's status (the field ``core.operator.status_patch.StatusOwner.MASTER`` owns). Only a master
that has a platform to write to (the master's ``scale_plan_platform``, as the operator's implicit
masters do) copies anything; ``flexjob run`` has no job object. Not for measuring (trainer) or
fitting (``core.training.goodput_model``).
"""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flexjob.api import names
from flexjob.api.errors import InvalidSpecError
from flexjob.api.limits import check_merged_profilings, profilings_from_json

log = logging.getLogger(__name__)

#: Seconds between two copies at most once per document change (the Allocator re-plans
#: every minute; fresher is not useful).
DEFAULT_EVERY_S = 5.0

ReadKV = Callable[[str], bytes | None]
WriteProfilings = Callable[[dict[str, Any]], None]


@dataclass(eq=False)
class ProfilingsSync:
    """Copies ``KV_PROFILINGS`` into ``status.profilings`` when it changed (see module doc)."""

    read: ReadKV
    write: WriteProfilings
    every_s: float = DEFAULT_EVERY_S
    clock: Callable[[], float] = time.monotonic
    _copied: bytes | None = field(default=None, init=False)
    _last: float = field(default=-float("inf"), init=False)

    def tick(self, *, force: bool = False) -> bool:
        """Copy the document if it changed and ``every_s`` passed (or ``force``); whether it
        wrote. A document that is not a JSON object within ``api.limits``' profilings bounds
        (size, depth) is logged and skipped, never written."""
        now = self.clock()
        if not force and now - self._last < self.every_s:
            return False
        self._last = now
        raw = self.read(names.KV_PROFILINGS)
        if raw is None or raw == self._copied:
            return False
        try:  # checked when set too; a journal of an older master may hold anything
            doc = profilings_from_json(names.KV_PROFILINGS, raw)
        except InvalidSpecError as exc:
            log.warning("event=profilings_refused problem=%r; not copied", str(exc))
            self._copied = raw
            return False
        try:
            self.write(doc)
        except InvalidSpecError as exc:  # the merged status would be over its bound
            log.warning("event=profilings_refused problem=%r; not copied", str(exc))
            self._copied = raw
            return False
        self._copied = raw
        return True


def status_writer(platform_name: str, namespace: str, job_name: str) -> WriteProfilings | None:
    """Writes ``status.profilings`` of the job ``namespace/job_name`` on the platform
    ``platform_name``; None without one ("")."""
    if not platform_name:
        return None
    from flexjob.platform.registry import open_platform

    platform = open_platform(platform_name)

    def write(doc: dict[str, Any]) -> None:
        """Merge ``doc`` into the status; ``InvalidSpecError`` when the merge would be over
        ``api.limits.MAX_PROFILINGS_BYTES`` (what the server's posts left counts too)."""
        status = platform.get_job(namespace, job_name).status
        # the job models only once a master with a platform copies: not at `flexjob run`'s start
        from flexjob.core.operator.status_patch import merge_patch

        merged = merge_patch(status.profilings if status else {}, doc)
        check_merged_profilings(names.KV_PROFILINGS, merged)
        platform.patch_job_status(namespace, job_name, {"profilings": doc})

    return write
