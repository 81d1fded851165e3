"""``spec.masterSettings``: validated with the rest of the spec (a bad value is refused naming
its spec path and what is allowed), and read by ``MasterConfig.from_job`` group by group."""

from dataclasses import fields
from typing import Any

import pytest

from flexjob.api.errors import InvalidSpecError
from flexjob.api.job import ElasticJob
from flexjob.api.master_settings import MasterSettingsSpec
from flexjob.api.validate import validate
from flexjob.core.training.master_config import MasterConfig

WORKER = {
    "replicas": 1,
    "template": {"spec": {"containers": [{"name": "w", "image": "x", "command": ["python"]}]}},
}
#: Settings the rest of the spec decides (``api.master_settings``'s docstring names where).
FROM_ELSEWHERE = {
    "rendezvous": {"min_nodes", "max_nodes"},
    "optimizer": {"mode", "brain_url", "job"},
    "ps": {"num_ps"},
}


def doc(settings: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ElasticJob",
        "metadata": {"name": "j"},
        "spec": {
            "dataset": {"size": 10},
            "masterSettings": settings,
            "replicaSpecs": {"worker": WORKER},
        },
    }


@pytest.mark.parametrize(
    ("settings", "path", "allowed"),
    [
        (
            {"nodeHealth": {"heartbeatTimeout": 0}},
            "spec.masterSettings.nodeHealth.heartbeatTimeout",
            "greater than 0",
        ),
        ({"rpc": {"server": "fast"}}, "spec.masterSettings.rpc.server", "threads, aio"),
        (
            {"persistence": {"snapshotEvery": 0}},
            "spec.masterSettings.persistence.snapshotEvery",
            "below the minimum 1",
        ),
        (
            {"nodeHealth": {"deathTimeout": 5}},
            "spec.masterSettings.nodeHealth.deathTimeout",
            "did you mean 'heartbeatTimeout'",
        ),
        ({"stragglers": {}}, "spec.masterSettings.stragglers", "allowed: nodeHealth"),
    ],
)
def test_a_bad_master_setting_is_refused_naming_its_spec_path(
    settings: dict[str, Any], path: str, allowed: str
) -> None:
    [problem] = validate(doc(settings))
    assert problem.path == path and allowed in str(problem), problem


def test_master_settings_in_the_spec_set_the_masters_groups() -> None:
    settings = {
        "nodeHealth": {"heartbeatTimeout": 20},
        "shards": {"slowShardTimeout": 90},
        "rpc": {"server": "aio", "shardStreams": 0},
        "rendezvous": {"lastCallTimeout": 3},
    }
    assert validate(doc(settings)) == []
    config = MasterConfig.from_job(ElasticJob.model_validate(doc(settings)))
    assert config.node_health.heartbeat_timeout == 20.0
    assert config.shards.slow_shard_timeout == 90.0
    assert (config.rpc.server, config.rpc.shard_streams, config.rpc.workers) == ("aio", 0, 32)
    assert config.rendezvous.last_call_timeout == 3.0
    assert MasterConfig.from_json(config.to_json()) == config  # what the master pod is handed


def test_a_master_setting_that_does_not_fit_the_job_fails_naming_the_spec_field() -> None:
    job = ElasticJob.model_validate(doc({"rendezvous": {"nodeUnit": 2}}))  # 1 worker
    with pytest.raises(InvalidSpecError, match=r"^spec.masterSettings: node_unit must be"):
        MasterConfig.from_job(job)


def test_every_master_setting_can_be_set_from_the_spec() -> None:
    """A new setting in a group of ``MasterConfig`` is settable by the operator's users too
    (or named here as one the rest of the spec decides)."""
    spec_groups = MasterSettingsSpec.model_fields
    master = MasterConfig()
    for group in spec_groups:
        settable = set(spec_groups[group].annotation.__args__[0].model_fields)  # type: ignore[union-attr]
        names = {f.name for f in fields(getattr(master, group))}
        assert settable == names - FROM_ELSEWHERE.get(group, set()), group
    groups = {
        f.name
        for f in fields(MasterConfig)
        if hasattr(getattr(master, f.name), "__dataclass_fields__")
    }
    assert groups - set(spec_groups) == {"slow_nodes"}  # spec.stragglers is that group
