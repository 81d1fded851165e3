"""The logic-learner rule: which learners need an aggregator, the addresses of a learner's
processes, and a DI job taking the cluster's AggregatorConfig when it has none of its own."""

from typing import Any

import pytest

from flexjob.api import ElasticJob, ReplicaType
from flexjob.api.problems import SpecError
from flexjob.core.operator.actions import CreateReplica
from flexjob.core.operator.logic_learners import (
    aggregator_template,
    gpu_addresses,
    is_logic_learner,
    learner_gpus,
    needs_cluster_aggregator,
    with_aggregator,
)
from tests.core.operator.reconcile_sim import Sim
from tests.server.jobs import di_v1_job, elastic_job


def config(name: str, command: str) -> dict[str, Any]:
    container = {"name": "aggregator", "image": "x", "command": [command]}
    return {
        "apiVersion": "diengine.opendilab.org/v1alpha1",
        "kind": "AggregatorConfig",
        "metadata": {"name": name},
        "spec": {"aggregator": {"template": {"spec": {"containers": [container]}}}},
    }


@pytest.mark.parametrize(
    ("template_gpus", "requested", "logic"),
    [(0, 0, False), (1, 0, False), (1, 1, False), (2, 0, True), (0, 2, True), (1, 4, True)],
)
def test_a_learner_with_more_than_one_gpu_is_a_logic_learner(
    template_gpus: int, requested: int, logic: bool
) -> None:
    job = di_v1_job(learner_gpus=template_gpus)
    assert learner_gpus(job) == template_gpus
    assert is_logic_learner(job, requested) is logic


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        (0, ["10.0.0.1:22271"]),
        (1, ["10.0.0.1:22271"]),
        (3, ["10.0.0.1:22271", "10.0.0.1:22272", "10.0.0.1:22273"]),
    ],
)
def test_a_learners_processes_listen_on_its_port_and_the_ports_after_it(
    gpus: int, expected: list[str]
) -> None:
    assert gpu_addresses("10.0.0.1:22271", gpus) == expected


def test_a_dijob_without_its_own_aggregator_takes_the_clusters_first_config() -> None:
    job = di_v1_job(aggregator=False)
    assert needs_cluster_aggregator(job)
    template = aggregator_template([config("zeta", "/bin/z"), config("alpha", "/bin/a")])
    seen = with_aggregator(job, template)
    spec = seen.spec.replica_specs[ReplicaType.AGGREGATOR]
    assert spec.template.spec.containers[0].command == ["/bin/a"]
    assert (spec.replicas, spec.min_replicas) == (0, 0)  # on request, none at start
    assert ReplicaType.AGGREGATOR not in job.spec.replica_specs  # the stored job is unchanged


@pytest.mark.parametrize(
    "job", [di_v1_job(aggregator=True), elastic_job()], ids=["own-config", "not-di"]
)
def test_jobs_with_their_own_aggregator_or_not_driven_by_di_are_left_alone(job: ElasticJob) -> None:
    assert not needs_cluster_aggregator(job)
    assert with_aggregator(job, aggregator_template([config("a", "/bin/a")])) is job


def test_no_cluster_config_leaves_the_job_alone_and_a_bad_one_names_its_field() -> None:
    job = di_v1_job(aggregator=False)
    assert aggregator_template([]) is None
    assert with_aggregator(job, None) is job
    bad = config("a", "/bin/a")
    bad["spec"]["aggregator"]["template"] = 3
    with pytest.raises(SpecError, match=r"spec\.aggregator\.template"):
        aggregator_template([bad])


def test_the_operator_creates_the_aggregator_from_the_clusters_template() -> None:
    job = with_aggregator(di_v1_job(aggregator=False), aggregator_template([config("a", "agg")]))
    sim = Sim(job, server_url="http://127.0.0.1:8080")
    sim.settle()
    sim.ask(learner=1, aggregator=1)
    sim.settle()
    created = [a.request for step in sim.history for a in step if isinstance(a, CreateReplica)]
    (aggregator,) = [r for r in created if r.type is ReplicaType.AGGREGATOR]
    assert aggregator.name == "cartpole-aggregator-0"
    assert aggregator.template.spec.containers[0].command == ["agg"]
    assert aggregator.env["AGGREGATOR_PORT"] == "22272"
