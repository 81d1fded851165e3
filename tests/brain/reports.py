"""Builders of brain reports for tests: a job record and recorded samples as wire messages."""

from typing import Any

from flexjob.api import ReplicaType
from flexjob.core.planner import SpeedSample
from flexjob.rpc import brain_messages as schemas


def job_info(name: str = "job-a", workers: int = 1, **kw: Any) -> schemas.JobInfoMessage:
    return schemas.JobInfoMessage(
        name=name,
        resources={
            ReplicaType.WORKER: schemas.ReplicaResourcesMessage(
                replicas=workers, cpu=1.0, memory_mb=2048
            )
        },
        **kw,
    )


def speed(samples: list[SpeedSample]) -> list[schemas.SpeedSampleMessage]:
    return [
        schemas.SpeedSampleMessage(
            timestamp=s.timestamp,
            step=s.step,
            samples_per_second=s.samples_per_second,
            world_size=s.world_size,
        )
        for s in samples
    ]


def node_samples(raw: list[dict[str, Any]]) -> list[schemas.NodeSampleMessage]:
    return [schemas.NodeSampleMessage.model_validate(s) for s in raw]


def node_events(raw: list[dict[str, Any]]) -> list[schemas.NodeEventMessage]:
    return [schemas.NodeEventMessage.model_validate(e) for e in raw]
