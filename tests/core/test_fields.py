"""``core.fields.build``: one field list (the target type's) for copies between shapes."""

from dataclasses import dataclass, field

import pytest

from flexjob.core.fields import build, codec, field_names
from flexjob.rpc import messages
from flexjob.rpc.brain_messages import SpeedSampleMessage
from flexjob.rpc.gen import master_pb2 as pb


@dataclass(frozen=True)
class Sample:
    timestamp: float
    step: int
    samples_per_second: float
    world_size: int
    tags: tuple[str, ...] = ()
    seen: int = field(default=0, init=False)


def test_builds_a_pydantic_model_from_a_dataclass_given_fields_winning() -> None:
    got = build(SpeedSampleMessage, Sample(1.0, 2, 3.0, 4), step=7)
    assert got == SpeedSampleMessage(timestamp=1.0, step=7, samples_per_second=3.0, world_size=4)


def test_repeated_fields_become_tuples_and_init_false_fields_are_not_copied() -> None:
    world = messages.NodeWorld(True, 3, 1, 2, "h:1", "p", ("a", "b"))
    to_pb, from_pb = codec(messages.NodeWorld, pb.WorldInfo)
    wire = to_pb(world)
    assert list(wire.members) == ["a", "b"]
    assert from_pb(wire) == world
    assert field_names(Sample) == ["timestamp", "step", "samples_per_second", "world_size", "tags"]


def test_a_missing_source_field_or_an_unknown_target_type_is_an_error() -> None:
    with pytest.raises(AttributeError, match="timestamp"):
        build(Sample, object())
    with pytest.raises(TypeError, match="no field list"):
        field_names(int)
