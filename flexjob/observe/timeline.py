"""A job's life as a file: ``<job-dir>/timeline.jsonl``, one JSON object a line.

Two kinds of record, both with ``t`` (wall-clock seconds): a ``sample`` (world size, samples/s,
step, loss when the trainer reports one, shards done of total) taken every few seconds by the
master, and an ``event`` (a node joined, was lost or failed, a round re-formed the world, the
job was scaled) written when it happens. ``read`` loads a file (a torn last line is skipped);
``narrate`` turns events into the lines a user reads ("node worker-2 lost, world 3 → 2,
resumed in 0.4 s"); ``summary`` is the text ``flexjob describe`` shows. Writing is the master's
(``master.timeline``); drawing is ``observe.plot``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILE_NAME = "timeline.jsonl"

#: Event names a timeline holds (the master's own event names, see ``master.logs``).
JOINED = "node_joined"
LOST = "node_dead"
FAILED = "node_failed"
ROUND = "round_completed"
SCALED = "scaled"
FINISHED = "dataset_finished"
EVENT_NAMES = (JOINED, LOST, FAILED, ROUND, SCALED, FINISHED)


@dataclass(frozen=True, slots=True)
class Sample:
    t: float
    world_size: int
    samples_per_second: float
    step: int
    shards_done: int
    shards_total: int
    loss: float | None = None


@dataclass(frozen=True, slots=True)
class Event:
    t: float
    name: str
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def node(self) -> str:
        return str(self.fields.get("node", "?"))


@dataclass(frozen=True, slots=True)
class Timeline:
    samples: tuple[Sample, ...]
    events: tuple[Event, ...]

    @property
    def start(self) -> float:
        times = [s.t for s in self.samples] + [e.t for e in self.events]
        return min(times, default=0.0)


def sample_record(s: Sample) -> dict[str, Any]:
    rec: dict[str, Any] = {"kind": "sample", "t": round(s.t, 3), "world_size": s.world_size}
    rec |= {"samples_per_second": round(s.samples_per_second, 2), "step": s.step}
    rec |= {"shards_done": s.shards_done, "shards_total": s.shards_total}
    if s.loss is not None:
        rec["loss"] = s.loss
    return rec


def event_record(e: Event) -> dict[str, Any]:
    return {"kind": "event", "t": round(e.t, 3), "event": e.name, **e.fields}


def parse(records: Iterable[dict[str, Any]]) -> Timeline:
    samples: list[Sample] = []
    events: list[Event] = []
    for r in records:
        if r.get("kind") == "sample":
            loss = r.get("loss")
            samples.append(
                Sample(
                    float(r["t"]),
                    int(r.get("world_size", 0)),
                    float(r.get("samples_per_second", 0.0)),
                    int(r.get("step", 0)),
                    int(r.get("shards_done", 0)),
                    int(r.get("shards_total", 0)),
                    None if loss is None else float(loss),
                )
            )
        elif r.get("kind") == "event":
            rest = {k: v for k, v in r.items() if k not in ("kind", "t", "event")}
            events.append(Event(float(r["t"]), str(r["event"]), rest))
    return Timeline(tuple(samples), tuple(events))


def read(path: Path) -> Timeline:
    """The timeline in ``path`` (a job directory or the file itself); empty when missing."""
    file = path / FILE_NAME if path.is_dir() else path
    records = []
    try:
        lines = file.read_text().splitlines()
    except FileNotFoundError:
        lines = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by a kill mid-write
    return parse(records)


def narrate(events: Sequence[Event]) -> list[tuple[float, str]]:
    """One line per change of the world a user cares about, with its time: a node lost or
    joined (with the world before → after and how long training waited), a failure."""
    lines: list[tuple[float, str]] = []
    world = 0
    pending: list[tuple[Event, str]] = []  # losses/joins waiting for the round that follows
    for e in events:
        if e.name == ROUND:
            after = int(e.fields.get("world_size", 0))
            for cause, verb in pending:
                waited = e.t - cause.t
                lines.append(
                    (
                        cause.t,
                        f"node {cause.node} {verb}, world {world} → {after}, "
                        f"resumed in {waited:.1f} s",
                    )
                )
            if not pending and world and after != world:
                lines.append((e.t, f"world {world} → {after} (round {e.fields.get('round')})"))
            pending = []
            world = after
        elif e.name == LOST:
            pending.append((e, "lost"))
        elif e.name == JOINED and world and not e.fields.get("implicit"):
            if not any(c.node == e.node for c, _ in pending):
                pending.append((e, "joined"))
        elif e.name == FAILED:
            code = e.fields.get("exit_code", "?")
            again = "restarting" if e.fields.get("restarting") else "not restarting"
            lines.append((e.t, f"node {e.node} failed (exit code {code}), {again}"))
            if e.fields.get("restarting"):
                pending.append((e, "restarted"))
        elif e.name == SCALED:
            lines.append((e.t, f"scaled: {e.fields.get('detail', '')}".rstrip(": ")))
    return lines


def summary(tl: Timeline, *, last_samples: int = 5) -> list[str]:
    """The text ``flexjob describe`` shows: peak and last numbers, then the events."""
    if not tl.samples and not tl.events:
        return []
    t0 = tl.start
    out: list[str] = []
    if tl.samples:
        last = tl.samples[-1]
        peak = max(s.samples_per_second for s in tl.samples)
        worlds = sorted({s.world_size for s in tl.samples if s.world_size})
        span = last.t - t0
        out.append(
            f"{len(tl.samples)} samples over {span:.0f} s; world sizes {worlds or [0]}; "
            f"peak {peak:,.0f} samples/s; shards {last.shards_done}/{last.shards_total}; "
            f"step {last.step}" + (f"; loss {last.loss:.4g}" if last.loss is not None else "")
        )
        for s in tl.samples[-last_samples:]:
            loss = f" loss {s.loss:.4g}" if s.loss is not None else ""
            out.append(
                f"  +{s.t - t0:7.1f} s  world {s.world_size}  {s.samples_per_second:9,.0f} "
                f"samples/s  step {s.step}  shards {s.shards_done}/{s.shards_total}{loss}"
            )
    for t, line in narrate(tl.events):
        out.append(f"  +{t - t0:7.1f} s  {line}")
    return out


class Follower:
    """Tails a job's timeline while it runs: ``new_lines`` returns the narrated lines
    (``narrate``) that appeared since the last call. For ``flexjob run``'s output."""

    def __init__(self, job_dir: Path) -> None:
        self._file = job_dir / FILE_NAME
        self._offset = 0
        self._events: list[Event] = []
        self._told = 0

    def new_lines(self) -> list[str]:
        try:
            with self._file.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        whole = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written waits
        self._offset += len(whole)
        records = []
        for line in whole.decode(errors="replace").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        self._events.extend(parse(records).events)
        lines = narrate(self._events)
        fresh, self._told = lines[self._told :], len(lines)
        return [text for _, text in fresh]
