"""DI Orchestrator v1 lifecycle: the coordinator first and alone, the other roles only as it asks,
the phase following the coordinator, quiet replacement of the others, DI's environment."""

import pytest

from flexjob.api import CleanPodPolicy, ElasticJob, JobPhase, ReplicaType
from flexjob.api.defaults import apply_defaults
from flexjob.api.load import job_from_dict
from flexjob.core.operator.actions import CreateReplica
from tests.core.operator.reconcile_sim import Sim, kinds
from tests.support.manifests import manifest

SERVER = "http://127.0.0.1:8080"


def dijob(clean: str = "Running") -> ElasticJob:
    def role(name: str) -> dict[str, object]:
        container = {"name": name, "image": "ding", "command": ["ding", "-m", "dist"]}
        return {"template": {"spec": {"containers": [container]}}}

    roles = {name: role(name) for name in ("coordinator", "collector", "learner")}
    spec = {"cleanPodPolicy": clean, **roles}
    raw = manifest(
        "DIJob", "cp", spec, api_version="diengine.opendilab.org/v1alpha2", namespace="ns"
    )
    config = {
        "apiVersion": "diengine.opendilab.org/v1alpha2",
        "kind": "AggregatorConfig",
        "metadata": {"name": "agg"},
        "spec": {"aggregator": role("aggregator")},
    }
    return apply_defaults(job_from_dict(raw, [config]))


def started() -> Sim:
    sim = Sim(dijob(), server_url=SERVER)
    sim.settle()
    return sim


def test_the_coordinator_is_created_first_and_alone_with_its_service() -> None:
    sim = Sim(dijob(), server_url=SERVER)
    assert kinds(sim.step()) == ["service cp-coordinator-0"]
    assert kinds(sim.step()) == ["create cp-coordinator-0"]
    assert sim.phase is JobPhase.STARTING
    sim.settle()
    assert sorted(sim.replicas) == ["cp-coordinator-0"]
    assert sim.phase is JobPhase.RUNNING


def test_collectors_and_learners_come_only_as_the_coordinator_asks() -> None:
    sim = started()
    sim.ask(collector=2, learner=1)
    sim.settle()
    assert sorted(sim.replicas) == [
        "cp-collector-0",
        "cp-collector-1",
        "cp-coordinator-0",
        "cp-learner-0",
    ]
    assert sim.phase is JobPhase.RUNNING
    sim.ask(collector=1)
    sim.settle()
    assert "cp-collector-1" not in sim.replicas
    assert sim.phase is JobPhase.RUNNING


@pytest.mark.parametrize(
    ("rtype", "port_env", "port"),
    [
        (ReplicaType.COORDINATOR, "COORDINATOR_PORT", 22273),
        (ReplicaType.COLLECTOR, "COLLECTOR_PORT", 22270),
        (ReplicaType.LEARNER, "LEARNER_PORT", 22271),
        (ReplicaType.AGGREGATOR, "AGGREGATOR_PORT", 22272),
    ],
)
def test_every_role_gets_dis_environment_and_its_default_port(
    rtype: ReplicaType, port_env: str, port: int
) -> None:
    sim = started()
    sim.ask(collector=1, learner=1, aggregator=1)
    sim.settle()
    created = [a.request for step in sim.history for a in step if isinstance(a, CreateReplica)]
    (request,) = [r for r in created if r.type is rtype]
    name = f"cp-{rtype.value}-0"
    assert request.env["KUBERNETES_POD_NAMESPACE"] == "ns"
    assert request.env["KUBERNETES_POD_NAME"] == name
    assert request.env["KUBERNETES_SERVER_URL"] == SERVER
    assert request.env["KUBERNETES_SERVER_API_VERSION"] == "v1alpha2"
    assert request.env[port_env] == str(port)
    assert sim.services[name].address == f"{name}:{port}"


@pytest.mark.parametrize("role", ["cp-collector-0", "cp-learner-0"])
def test_a_failed_role_is_recreated_without_touching_phase_or_backoff(role: str) -> None:
    sim = started()
    sim.ask(collector=1, learner=1)
    sim.settle()
    for _ in range(5):  # more than backoffLimit 3
        sim.finish(role, 1)
        assert kinds(sim.step()) == [f"delete {role}"]
        assert sim.phase is JobPhase.RUNNING
        sim.settle()
        assert role in sim.replicas
    assert sim.job.status is not None
    assert sim.job.status.restart_count == 0
    assert sim.phase is JobPhase.RUNNING


@pytest.mark.parametrize(
    ("code", "phase"), [(0, JobPhase.SUCCEEDED), (1, JobPhase.FAILED), (137, JobPhase.FAILED)]
)
def test_the_phase_follows_the_coordinator_when_it_ends(code: int, phase: JobPhase) -> None:
    sim = started()
    sim.ask(collector=2, learner=1)
    sim.settle()
    sim.finish("cp-coordinator-0", code)
    sim.step()
    assert sim.phase is phase
    assert "cp-coordinator-0" in sim.replicas  # ended, not restarted
    assert sorted(sim.replicas) == ["cp-coordinator-0"]  # cleanPodPolicy Running


def test_clean_pod_policy_none_keeps_what_is_left() -> None:
    sim = Sim(dijob("None"), server_url=SERVER)
    sim.settle()
    sim.ask(collector=1)
    sim.settle()
    sim.finish("cp-coordinator-0", 0)
    sim.step()
    assert sim.phase is JobPhase.SUCCEEDED
    assert sorted(sim.replicas) == ["cp-collector-0", "cp-coordinator-0"]
    assert sim.job.spec.clean_pod_policy is CleanPodPolicy.NONE
