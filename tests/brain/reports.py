"""Builders of brain reports for tests: a job record and recorded samples as wire messages."""

from typing import Any

from flexjob.api import ReplicaType
from flexjob.core.planner import SpeedSample
from flexjob.rpc import brain_messages as schemas


def job_info(name: str = "job-a", workers: int = 1, **kw: Any) -> schemas.JobInfo:
    return schemas.JobInfo(
        name=name,
        resources={
            ReplicaType.WORKER: schemas.Resources(replicas=workers, cpu=1.0, memory_mb=2048)
        },
        **kw,
    )


def speed(samples: list[SpeedSample]) -> list[schemas.SpeedSample]:
    return [
        schemas.SpeedSample(
            timestamp=s.timestamp,
            step=s.step,
            samples_per_second=s.samples_per_second,
            world_size=s.world_size,
        )
        for s in samples
    ]


def node_samples(raw: list[dict[str, Any]]) -> list[schemas.NodeSample]:
    return [schemas.NodeSample.model_validate(s) for s in raw]


def node_events(raw: list[dict[str, Any]]) -> list[schemas.NodeEvent]:
    return [schemas.NodeEvent.model_validate(e) for e in raw]
