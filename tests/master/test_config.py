import pytest

from flexjob.api import BatchSpec, ElasticJob
from flexjob.core.training.batch import BatchPlan, batch_plan_from_spec
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import MasterConfig, NodeHealthConfig
from flexjob.core.training.rendezvous import RendezvousConfig
from flexjob.core.training.stragglers import StragglerConfig


def job(spec: dict[str, object]) -> ElasticJob:
    return ElasticJob.model_validate({"metadata": {"name": "demo"}, "spec": spec})


def test_worker_bounds_dataset_and_batch_come_from_the_job() -> None:
    cfg = MasterConfig.from_job(
        job(
            {
                "replicaSpecs": {"worker": {"minReplicas": 2, "maxReplicas": 6}},
                "dataset": {"size": 1000, "shardSize": 50, "epochs": 3, "shuffle": True},
                "batch": {"microBatchSize": 8, "maxWorkers": 6},
            }
        )
    )
    assert (cfg.job_name, cfg.rendezvous.min_nodes, cfg.rendezvous.max_nodes) == ("demo", 2, 6)
    assert cfg.datasets == (Dataset(size=1000, shard_size=50, epochs=3, shuffle=True),)
    assert cfg.batch is not None and cfg.batch.global_batch_size == 48


def test_an_adaptive_batch_gives_the_plan_its_bound_and_a_fixed_one_none() -> None:
    batch = {"globalBatchSize": 64, "microBatchSize": 8, "maxGlobalBatchSize": 512}
    adaptive = MasterConfig.from_job(job({"batch": {**batch, "adaptive": True}})).batch
    fixed = MasterConfig.from_job(job({"batch": batch})).batch
    assert adaptive is not None and fixed is not None
    assert (adaptive.global_batch_size, adaptive.max_global_batch_size) == (64, 512)
    assert (fixed.global_batch_size, fixed.max_global_batch_size) == (64, 0)


def test_fixed_replicas_give_a_fixed_world() -> None:
    cfg = MasterConfig.from_job(job({"replicaSpecs": {"worker": {"replicas": 3}}}))
    assert (cfg.rendezvous.min_nodes, cfg.rendezvous.max_nodes) == (3, 3)


def test_overrides_replace_fields_and_ignore_none() -> None:
    cfg = MasterConfig.from_job(job({}), port=5000, node_health__heartbeat_timeout=None)
    assert cfg.port == 5000 and cfg.node_health == NodeHealthConfig()


def test_file_datasets_are_accepted() -> None:
    cfg = MasterConfig.from_job(
        job({"dataset": {"files": ["a.csv:10", "b.csv:5"], "shardSize": 4}})
    )
    assert cfg.datasets[0].splitter().num_shards == 5


def test_config_round_trips_through_json() -> None:
    cfg = MasterConfig(
        datasets=(Dataset(files=("x:3",)),),
        batch=BatchPlan.for_global_batch(32, 4),
        rendezvous=RendezvousConfig(min_nodes=1, max_nodes=2),
    )
    assert MasterConfig.from_json(cfg.to_json()) == cfg


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Dataset(), "give exactly one of size or files"),
        (lambda: Dataset(size=10, epochs=0), "dataset.epochs must be >= 1"),
        (
            lambda: batch_plan_from_spec(BatchSpec(micro_batch_size=8)),
            "give globalBatchSize or maxWorkers",
        ),
        (
            lambda: MasterConfig(rendezvous=RendezvousConfig(min_nodes=3, max_nodes=2)),
            "max_nodes must be >= min_nodes",
        ),
        (lambda: MasterConfig(port=70000), r"port must be in \[0, 65535\]"),
        (lambda: MasterConfig(cpu=-1), r"cpu must be a CPU number \(>= 0\) or None, got -1"),
    ],
)
def test_bad_config_names_the_field(build: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()  # type: ignore[operator]


def test_a_wildcard_bind_advertises_a_reachable_host() -> None:
    assert MasterConfig(host="0.0.0.0").public_host not in ("0.0.0.0", "")
    assert MasterConfig(host="0.0.0.0", advertise_host="master-0.svc").public_host == (
        "master-0.svc"
    )


def test_the_straggler_settings_come_from_the_job() -> None:
    cfg = MasterConfig.from_job(
        job({"stragglers": {"policy": "exclude", "ratio": 3, "windowSeconds": 10}})
    )
    lag = cfg.slow_nodes
    assert (lag.policy, lag.ratio, lag.window_s) == ("exclude", 3.0, 10.0)
    assert MasterConfig.from_job(job({})).slow_nodes == StragglerConfig()
