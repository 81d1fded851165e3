"""A job's output across its replicas, as ``flexjob logs`` and the SDK's ``get_job_logs`` read
it: every replica (or those a ``--replica`` name, a replica type or a label selector pick),
each line prefixed ``[worker-1] `` when more than one is read, optionally only the last
``tail`` lines, only those of the last ``since_seconds`` (where the platform keeps times) or
the previous incarnation's, and with ``follow`` interleaved as they come.

Not for one replica's raw output (``Platform.read_logs``) nor for printing (the CLI).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from flexjob.api import ReplicaType
from flexjob.api.errors import InvalidSpecError, NotFoundError
from flexjob.api.names import GROUP, LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from flexjob.api.roles import MASTER_TYPE
from flexjob.core.replicas import Replica
from flexjob.platform.contract import LogOptions, Platform


@dataclass(frozen=True, slots=True)
class LogQuery:
    """Which lines of which replicas: the fields of ``kubectl logs`` flexjob takes."""

    replica: str | None = None
    replica_type: ReplicaType | None = None
    replica_index: int | None = None
    selector: str = ""
    follow: bool = False
    tail: int | None = None
    since_seconds: float | None = None
    previous: bool = False
    timeout: float | None = None


def parse_selector(text: str) -> dict[str, str]:
    """``replica-type=worker,flexjob.dev/replica-index=1`` → labels (``KEY=VALUE`` or
    ``KEY==VALUE``; a key without a prefix is flexjob's: ``flexjob.dev/KEY``)."""
    wanted: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.replace("==", "=").partition("=")
        if not sep or not key or "!" in key:
            raise InvalidSpecError(
                f"--selector: {item!r} is not KEY=VALUE (e.g. replica-type=worker)"
            )
        wanted[key if "/" in key else f"{GROUP}/{key}"] = value
    return wanted


def _matches(replica: Replica, wanted: Mapping[str, str]) -> bool:
    """Its labels (with the job, type and index labels every platform's replica has) hold
    ``wanted``."""
    labels = {
        LABEL_JOB_NAME: replica.job,
        LABEL_REPLICA_TYPE: replica.type.value,
        LABEL_REPLICA_INDEX: str(replica.index),
        **replica.labels,
    }
    return all(labels.get(k) == v for k, v in wanted.items())


def select_replicas(replicas: list[Replica], job: str, query: LogQuery) -> list[Replica]:
    """The replicas ``query`` picks, masters first, then by type and index; ``NotFoundError``
    naming the ones there are when it picks none."""
    picked = list(replicas)
    if query.replica is not None:
        short = query.replica.removeprefix(f"{job}-")
        picked = [r for r in picked if r.short_name == short]
    if query.replica_type is not None:
        picked = [r for r in picked if r.type is query.replica_type]
    if query.replica_index is not None:
        picked = [r for r in picked if r.index == query.replica_index]
    if query.selector:
        labels = parse_selector(query.selector)
        picked = [r for r in picked if _matches(r, labels)]
    if not picked:
        there = ", ".join(sorted(r.short_name for r in replicas)) or "none"
        raise NotFoundError(f"no replica of job {job} matches; its replicas: {there}")
    return sorted(picked, key=lambda r: (r.type is not MASTER_TYPE, r.type.value, r.index))


def _lines(
    platform: Platform, namespace: str, name: str, query: LogQuery, prefix: str
) -> Iterator[str]:
    lines = platform.read_logs(
        namespace,
        name,
        follow=query.follow,
        timeout=query.timeout,
        options=LogOptions(query.previous, query.since_seconds, query.tail),
    )
    for line in lines:
        yield f"{prefix}{line}" if line.endswith("\n") else f"{prefix}{line}\n"


def _logged(platform: Platform, namespace: str, job: str) -> list[str]:
    """Short names of the replicas whose logs the platform keeps after they are gone (the
    local platform's log files); none elsewhere."""
    from flexjob.platform.local import LocalPlatform

    if not isinstance(platform, LocalPlatform):
        return []
    return sorted(p.stem for p in platform.job_logs_dir(namespace, job).glob("*.log"))


def log_names(platform: Platform, namespace: str, job: str, query: LogQuery) -> list[str]:
    """The short names of the replicas whose logs ``query`` reads: those it picks among the
    job's replicas; a named replica, or every logged one, when the job has no replicas any
    more (finished and cleaned up) but their logs are kept."""
    replicas = platform.list_replicas(namespace, job)
    if query.replica is not None and not query.selector:
        short = query.replica.removeprefix(f"{job}-")
        if not any(r.short_name == short for r in replicas):
            return [short]  # its log is read by name: NotFoundError if there is none
    if not replicas and not query.selector and query.replica_type is None:
        logged = _logged(platform, namespace, job)
        if logged:
            return logged
    return [r.short_name for r in select_replicas(replicas, job, query)]


def job_logs(platform: Platform, namespace: str, job: str, query: LogQuery) -> Iterator[str]:
    """The lines ``query`` asks for of job ``namespace/job``'s replicas (newline ended),
    prefixed ``[worker-1] `` when more than one replica is read."""
    shorts = log_names(platform, namespace, job, query)
    prefixes = {s: f"[{s}] " if len(shorts) > 1 else "" for s in shorts}
    if not query.follow or len(shorts) == 1:
        for short in shorts:
            yield from _lines(platform, namespace, f"{job}-{short}", query, prefixes[short])
        return
    yield from _interleaved(platform, namespace, job, query, prefixes)


def _interleaved(
    platform: Platform, namespace: str, job: str, query: LogQuery, prefixes: dict[str, str]
) -> Iterator[str]:
    """Every replica followed at once, lines as they come (one reader thread each)."""
    lines: queue.Queue[str | BaseException | None] = queue.Queue()

    def read(short: str) -> None:
        try:
            for line in _lines(platform, namespace, f"{job}-{short}", query, prefixes[short]):
                lines.put(line)
        except Exception as exc:  # handed to the reader: raised there
            lines.put(exc)
        finally:
            lines.put(None)

    for short in prefixes:
        threading.Thread(target=read, args=(short,), name="flexjob-logs", daemon=True).start()
    open_streams = len(prefixes)
    while open_streams:
        item = lines.get()
        if item is None:
            open_streams -= 1
        elif isinstance(item, BaseException):
            raise item
        else:
            yield item
