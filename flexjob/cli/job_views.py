"""How the job commands show jobs, replicas and events: rich tables, nothing else.

Pure rendering: no platform calls here (``job_cmds.py`` fetches, this module draws).
"""

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from flexjob.api import ElasticJob, ElasticJobStatus, JobPhase, ReplicaPhase, ReplicaType
from flexjob.api.load import dump_yaml
from flexjob.api.roles import MASTER_TYPE
from flexjob.core.operator.phases import parse_timestamp
from flexjob.core.operator.replica_plan import desired_counts
from flexjob.platform.contract import Event, Replica

PHASE_STYLES = {
    JobPhase.SUCCEEDED: "green",
    JobPhase.RUNNING: "cyan",
    JobPhase.FAILED: "red",
    JobPhase.RESTARTING: "yellow",
    JobPhase.RESCHEDULING: "yellow",
    ReplicaPhase.SUCCEEDED: "green",
    ReplicaPhase.RUNNING: "cyan",
    ReplicaPhase.FAILED: "red",
}


def age(when: datetime | str | None, now: datetime | None = None) -> str:
    """Kubectl-style age: 42s, 5m, 3h, 2d."""
    if when is None:
        return "-"
    start = parse_timestamp(when) if isinstance(when, str) else when
    seconds = int(((now or datetime.now(UTC)) - start).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * 2 or (unit == "m" and seconds >= 120):
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


#: What ``get`` shows beside the phase of an unfinished local job whose operator is gone.
NO_OPERATOR = "operator not running"


def _phase(phase: JobPhase | ReplicaPhase, note: str | None = None) -> Text:
    text = Text(phase.value, style=PHASE_STYLES.get(phase, ""))
    if note:
        text.append(f" ({note})", style="red")
    return text


def _types(wanted: Mapping[ReplicaType, int], status: ElasticJobStatus) -> str:
    """``worker:2/3 ps:1/1``: each type's active replicas of those wanted."""
    counts = status.replica_statuses
    return " ".join(
        f"{t.value}:{counts[t].active if t in counts else 0}/{n}" for t, n in wanted.items()
    )


def jobs_table(
    jobs: Sequence[ElasticJob],
    notes: Mapping[str, str] | None = None,
    *,
    wide: bool = False,
    header: bool = True,
) -> Table:
    """One row per job; ``notes``: text shown beside a job's phase, by ``namespace/name``;
    ``wide`` (``-o wide``): also each type's replicas and the status message."""
    table = Table(box=None, pad_edge=False, show_header=header)
    columns = ["NAMESPACE", "NAME", "PHASE", "REPLICAS", "RESTARTS", "AGE"]
    for column in columns + (["TYPES", "MESSAGE"] if wide else []):
        table.add_column(column)
    for job in jobs:
        status = job.status
        assert status is not None
        wanted = desired_counts(job, status)
        # Only the types the job asks for: an implicit job master is not one of its replicas.
        running = sum(s.active for t, s in status.replica_statuses.items() if t in wanted)
        row: list[str | Text] = [
            job.namespace,
            job.name,
            _phase(status.phase, (notes or {}).get(f"{job.namespace}/{job.name}")),
            f"{running}/{sum(wanted.values())}",
            str(status.restart_count),
            age(job.metadata.creation_timestamp),
        ]
        if wide:
            row += [_types(wanted, status), status.message or "-"]
        table.add_row(*row)
    return table


def replicas_table(
    job: ElasticJob, replicas: Sequence[Replica], note: str | None = None, *, wide: bool = False
) -> Table:
    """One row per replica; ``wide``: also its uid and, for a finished one, why it ended."""
    phase = job.status.phase if job.status else JobPhase.PENDING
    title = Text.assemble(f"{job.namespace}/{job.name}  ", _phase(phase, note))
    if job.status and job.status.message:
        title.append(f"  {job.status.message}")
    table = Table(title=title, title_justify="left", box=None, pad_edge=False)
    columns = ["REPLICA", "TYPE", "PHASE", "EXIT", "ADDRESS", "NODE", "AGE"]
    for column in columns + (["UID", "REASON"] if wide else []):
        table.add_column(column)
    for r in sorted(replicas, key=lambda r: (r.type is not MASTER_TYPE, r.type.value, r.index)):
        row: list[str | Text] = [
            r.short_name,
            r.type.value,
            _phase(r.phase),
            "-" if r.exit_code is None else str(r.exit_code),
            r.address or "-",
            r.node or "-",
            age(r.created),
        ]
        if wide:
            row += [r.uid or "-", r.reason or "-"]
        table.add_row(*row)
    return table


def events_table(events: Sequence[Event]) -> Table:
    table = Table(title="Events", title_justify="left", box=None, pad_edge=False)
    for column in ("AGE", "TYPE", "REASON", "MESSAGE"):
        table.add_column(column)
    for e in events:
        style = "yellow" if e.type.value == "Warning" else ""
        table.add_row(age(e.time), Text(e.type.value, style=style), e.reason, e.message)
    return table


def failures(replicas: Sequence[Replica]) -> list[RenderableType]:
    """The root cause of failed replicas: name, exit code and the last lines of its output."""
    parts: list[RenderableType] = []
    for r in replicas:
        if r.phase is not ReplicaPhase.FAILED:
            continue
        code = "unknown" if r.exit_code is None else str(r.exit_code)
        parts.append(Text(f"{r.short_name}: exit code {code}", style="red"))
        parts += [Text(f"  {line}") for line in r.message.splitlines()]
    return [Text("Failures", style="bold"), *parts, Text("")] if parts else []


def describe(
    job: ElasticJob, replicas: Sequence[Replica], events: Sequence[Event], note: str | None = None
) -> Group:
    spec = job.model_copy(update={"status": None}).to_wire()
    status = job.status.to_wire() if job.status else {}
    status.pop("conditions", None)
    parts: list[RenderableType] = [
        Text("Spec", style="bold"),
        Text(dump_yaml(spec)),
        Text("Status", style="bold"),
        Text(dump_yaml(status)),
        replicas_table(job, replicas, note),
        Text(""),
        *failures(replicas),
        events_table(events),
    ]
    return Group(*parts)
