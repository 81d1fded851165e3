"""DI Orchestrator's own rules for its jobs, as its designs give them: a DIJob v2 Succeeds
when all its tasks' replicas have, its evaluator too (v2: "when all workers Succeeded"); a
job of flexjob's own with an evaluator still succeeds on its workers; DI v1's
``cleanPodPolicy: ALL`` is flexjob's ``All``."""

from pathlib import Path

import pytest
import yaml

from flexjob.api import CleanPodPolicy, JobPhase
from flexjob.api.load import job_from_dict
from flexjob.api.validate import validate
from tests.api.specs import EXAMPLES
from tests.core.operator.reconcile_sim import Sim


def _dijob(name: str) -> dict:  # type: ignore[type-arg]
    return next(iter(yaml.safe_load_all(Path(EXAMPLES / name).read_text())))


def _running_v2() -> Sim:
    sim = Sim(job_from_dict(_dijob("dijob-v2.yaml")))
    sim.settle()
    assert sim.phase is JobPhase.RUNNING
    return sim


def test_a_dijob_v2_is_not_succeeded_while_its_evaluator_runs() -> None:
    sim = _running_v2()
    for name in sorted(sim.replicas):
        if "-evaluator-" not in name:
            sim.finish(name, 0)
    sim.step()
    assert sim.phase is JobPhase.RUNNING
    assert any("-evaluator-" in n for n in sim.replicas)  # not cleaned up either


def test_a_dijob_v2_succeeds_when_every_task_has() -> None:
    sim = _running_v2()
    for name in sorted(sim.replicas):
        sim.finish(name, 0)
    sim.step()
    assert sim.phase is JobPhase.SUCCEEDED


@pytest.mark.parametrize("spelling", ["ALL", "All"])
@pytest.mark.parametrize("example", ["dijob-v1.yaml", "dijob-v2.yaml"])
def test_clean_pod_policy_all_is_accepted_as_di_writes_it(spelling: str, example: str) -> None:
    doc = _dijob(example)
    doc["spec"]["cleanPodPolicy"] = spelling
    assert validate(doc) == []
    assert job_from_dict(doc).spec.clean_pod_policy is CleanPodPolicy.ALL


def test_another_clean_pod_policy_is_refused_naming_the_allowed_ones() -> None:
    doc = _dijob("dijob-v1.yaml")
    doc["spec"]["cleanPodPolicy"] = "Some"
    [problem] = validate(doc)
    assert problem.path == "spec.cleanPodPolicy"
    assert "Running" in problem.message and "All" in problem.message


def test_a_finished_dijob_v1_loses_its_coordinators_service_too() -> None:
    sim = Sim(job_from_dict(_dijob("dijob-v1.yaml")))
    sim.settle()
    coordinator = next(n for n in sim.replicas if "-coordinator-" in n)
    assert coordinator in sim.services
    sim.finish(coordinator, 0)
    sim.step()
    assert sim.phase is JobPhase.SUCCEEDED
    assert sim.services == {}
    assert coordinator in sim.replicas  # kept for its logs (cleanPodPolicy Running)
