"""A job's life as a file: ``<job-dir>/timeline.jsonl``, one JSON object a line.

Two kinds of record, both with ``t`` (wall-clock seconds): a ``sample`` (world size, samples/s,
step, loss when the trainer reports one, shards done of total) taken every few seconds by the
master, and an ``event`` (a node joined, was lost or failed, a round re-formed the world, the
job was scaled) written when it happens. ``read`` loads a file (a torn last line is skipped);
``changes`` / ``narrate`` turn events into what a user reads ("node worker-2 lost,
world 3 → 2, resumed in 0.4 s"); ``summary`` is the text ``flexjob describe`` shows. Writing
is the master's (``master.timeline``); drawing is ``observe.plot``.
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
STRAGGLING = "node_straggling"
PREFLIGHT_FAILED = "preflight_failed"
EVENT_NAMES = (JOINED, LOST, FAILED, ROUND, SCALED, FINISHED, STRAGGLING, PREFLIGHT_FAILED)


@dataclass(frozen=True, slots=True)
class TimelineSample:
    t: float
    world_size: int
    samples_per_second: float
    step: int
    shards_done: int
    shards_total: int
    loss: float | None = None


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    t: float
    name: str
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def node(self) -> str:
        return str(self.fields.get("node", "?"))


@dataclass(frozen=True, slots=True)
class Timeline:
    samples: tuple[TimelineSample, ...]
    events: tuple[TimelineEvent, ...]

    @property
    def start(self) -> float:
        times = [s.t for s in self.samples] + [e.t for e in self.events]
        return min(times, default=0.0)


def sample_record(s: TimelineSample) -> dict[str, Any]:
    rec: dict[str, Any] = {"kind": "sample", "t": round(s.t, 3), "world_size": s.world_size}
    rec |= {"samples_per_second": round(s.samples_per_second, 2), "step": s.step}
    rec |= {"shards_done": s.shards_done, "shards_total": s.shards_total}
    if s.loss is not None:
        rec["loss"] = s.loss
    return rec


def event_record(e: TimelineEvent) -> dict[str, Any]:
    return {"kind": "event", "t": round(e.t, 3), "event": e.name, **e.fields}


def parse(records: Iterable[dict[str, Any]]) -> Timeline:
    samples: list[TimelineSample] = []
    events: list[TimelineEvent] = []
    for r in records:
        if r.get("kind") == "sample":
            loss = r.get("loss")
            samples.append(
                TimelineSample(
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
            events.append(TimelineEvent(float(r["t"]), str(r["event"]), rest))
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


@dataclass(frozen=True, slots=True)
class WorldChange:
    """One thing a user cares about: a node lost, joined or restarted (the world re-formed,
    ``before`` → ``after`` nodes, training waited ``waited`` seconds), failed, or a scale."""

    t: float
    kind: str  # "lost" | "joined" | "restarted" | "failed" | "scaled" | "straggling" | "preflight"
    node: str = ""
    before: int = 0
    after: int = 0
    waited: float = 0.0
    detail: str = ""

    @property
    def text(self) -> str:
        if self.kind in ("lost", "joined", "restarted"):
            return (
                f"node {self.node} {self.kind}, world {self.before} → {self.after}, "
                f"resumed in {self.waited:.1f} s"
            )
        if self.kind == "failed":
            return f"node {self.node} failed ({self.detail})"
        if self.kind == "straggling":
            return f"node {self.node} straggling: {self.detail}"
        if self.kind == "preflight":
            return f"node {self.node} failed the pre-flight check: {self.detail}"
        return f"scaled: {self.detail}" if self.detail else "scaled"


def _members(e: TimelineEvent) -> list[str] | None:
    raw = e.fields.get("members")
    return [m for m in str(raw).split(",") if m] if raw is not None else None


def changes(events: Sequence[TimelineEvent]) -> list[WorldChange]:
    """What changed, from the master's events: each completed round is compared with the one
    before it (who left, who came); the world broke at the first join, loss or failure after
    a round, and training resumed when the next round completed."""
    out: list[WorldChange] = []
    prev: list[str] | None = None
    broke_at: float | None = None
    restarted: list[str] = []
    for e in events:
        if e.name == ROUND:
            members = _members(e) or []
            if prev is not None:
                since = broke_at if broke_at is not None else e.t
                lost = [n for n in prev if n not in members]
                came = [n for n in members if n not in prev]
                again = [n for n in restarted if n in members and n not in came]
                for kind, nodes in (("lost", lost), ("joined", came), ("restarted", again)):
                    out += [
                        WorldChange(since, kind, n, len(prev), len(members), e.t - since)
                        for n in nodes
                    ]
            prev, broke_at, restarted = members, None, []
        elif e.name in (JOINED, LOST, FAILED) and prev is not None:
            if broke_at is None and (e.name != LOST or e.node in prev):
                broke_at = e.t
            if e.name == FAILED:
                code = e.fields.get("exit_code", "?")
                restarting = bool(e.fields.get("restarting"))
                more = "restarting" if restarting else "not restarting"
                out.append(WorldChange(e.t, "failed", e.node, detail=f"exit code {code}, {more}"))
                if restarting:
                    restarted.append(e.node)
        elif e.name == SCALED:
            out.append(WorldChange(e.t, "scaled", detail=str(e.fields.get("detail", ""))))
        elif e.name == STRAGGLING:
            f = e.fields
            detail = (
                f"own step {f.get('step_seconds')} s, {f.get('times_slower')}x the others' "
                f"median {f.get('others_seconds')} s ({f.get('action')})"
            )
            out.append(WorldChange(e.t, "straggling", e.node, detail=detail))
        elif e.name == PREFLIGHT_FAILED:
            detail = f"{e.fields.get('reason')} ({e.fields.get('action')})"
            out.append(WorldChange(e.t, "preflight", e.node, detail=detail))
    return out


def narrate(events: Sequence[TimelineEvent]) -> list[tuple[float, str]]:
    """One line per change, with its time ("node worker-2 lost, world 3 → 2, resumed in
    0.4 s"); in the order the master saw them complete."""
    return [(c.t, c.text) for c in changes(events)]


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
        self._events: list[TimelineEvent] = []
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
