"""Loaders for the recorded stats in tests/brain/data/*.json, as core planner dataclasses."""

import json
from pathlib import Path
from typing import Any

from flexjob.api import ReplicaType
from flexjob.core.planner import (
    FinishedJob,
    JobLimits,
    JobProfile,
    JobStats,
    NodeEvent,
    NodeEventKind,
    NodeSample,
    ReplicaResources,
    SpeedSample,
)

DATA = Path(__file__).parent / "data"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())
    return data


def speed_samples(data: dict[str, Any]) -> list[SpeedSample]:
    return [SpeedSample(**s) for s in data.get("speed_samples", [])]


def node_samples(data: dict[str, Any]) -> list[NodeSample]:
    return [
        NodeSample(**{**s, "replica_type": ReplicaType(s["replica_type"])})
        for s in data.get("node_samples", [])
    ]


def node_events(data: dict[str, Any]) -> list[NodeEvent]:
    return [
        NodeEvent(
            **{
                **e,
                "replica_type": ReplicaType(e["replica_type"]),
                "kind": NodeEventKind(e["kind"]),
            }
        )
        for e in data.get("node_events", [])
    ]


def resources(raw: dict[str, Any]) -> dict[ReplicaType, ReplicaResources]:
    return {ReplicaType(t): ReplicaResources(**r) for t, r in raw.items()}


def finished_jobs(data: dict[str, Any]) -> list[FinishedJob]:
    return [
        FinishedJob(
            profile=JobProfile(**j["profile"]),
            succeeded=j["succeeded"],
            finished_at=j["finished_at"],
            resources=resources(j["resources"]),
            peak_memory_mb={ReplicaType(t): m for t, m in j.get("peak_memory_mb", {}).items()},
        )
        for j in data["jobs"]
    ]


def job_stats(data: dict[str, Any], name: str = "job", workers: int | None = None) -> JobStats:
    current = resources(data.get("current", {}))
    if workers is not None:
        current[ReplicaType.WORKER] = ReplicaResources(workers, 1.0, 2048)
    return JobStats(
        profile=JobProfile(name),
        limits=JobLimits(**data.get("limits", {})),
        current=current,
        node_samples=node_samples(data),
        speed_samples=speed_samples(data),
        node_events=node_events(data),
    )
