"""Several DIJob v2 tasks of one type, as DI Orchestrator runs them: each task its own
replicas, template and name (``api.di_tasks``); problems named in the DIJob's own paths."""

import pytest

from flexjob.api import ReplicaType, SpecError
from flexjob.api.di_tasks import task_name, task_template
from flexjob.api.load import job_from_dict
from flexjob.api.validate import validate
from tests.api.specs import two_collector_tasks


def test_two_tasks_of_a_type_keep_their_own_replicas_in_spec_order() -> None:
    spec = job_from_dict(two_collector_tasks()).spec.replica_specs[ReplicaType.COLLECTOR]
    assert spec.replicas == 5
    assert [(t.name, t.replicas) for t in spec.tasks or []] == [
        ("collector", 2),
        ("collector-b", 3),
    ]
    assert [task_name(spec, i) for i in range(5)] == ["collector"] * 2 + ["collector-b"] * 3


def test_each_replica_runs_its_own_tasks_template() -> None:
    spec = job_from_dict(two_collector_tasks()).spec.replica_specs[ReplicaType.COLLECTOR]
    images = [task_template(spec, i).spec.containers[0].image for i in range(5)]
    assert images == ["opendilab/ding:nightly"] * 2 + ["b"] * 3


def test_a_replica_a_scale_up_adds_belongs_to_the_last_task() -> None:
    spec = job_from_dict(two_collector_tasks()).spec.replica_specs[ReplicaType.COLLECTOR]
    assert task_name(spec, 7) == "collector-b"


def test_the_two_tasks_validate() -> None:
    assert validate(two_collector_tasks()) == []


def test_one_of_several_tasks_of_a_type_without_a_name_is_refused_at_its_path() -> None:
    raw = two_collector_tasks()
    del raw["spec"]["tasks"][2]["name"]
    with pytest.raises(SpecError) as info:
        job_from_dict(raw)
    assert [p.path for p in info.value.problems] == ["spec.tasks[2].name"]


@pytest.mark.parametrize(
    ("name", "message"),
    [("collector", "a second task named 'collector'"), ("Collector_B", "DNS-1123 label")],
)
def test_a_task_name_that_cannot_name_its_replicas_is_refused_at_its_path(
    name: str, message: str
) -> None:
    raw = two_collector_tasks()
    raw["spec"]["tasks"][2]["name"] = name
    problems = validate(raw)
    assert [p.path for p in problems] == ["spec.tasks[2].name"]
    assert message in problems[0].message


def test_an_elasticjobs_tasks_must_add_up_to_its_replicas() -> None:
    job = job_from_dict(two_collector_tasks()).to_wire()
    job["spec"]["replicaSpecs"]["collector"]["replicas"] = 4
    problems = validate(job)
    assert [p.path for p in problems] == ["spec.replicaSpecs.collector.replicas"]
    assert "not the sum of spec.replicaSpecs.collector.tasks[*].replicas (5)" in problems[0].message


def test_a_problem_of_the_first_of_several_tasks_is_named_once() -> None:
    raw = two_collector_tasks()
    del raw["spec"]["tasks"][1]["template"]["spec"]["containers"][0]["image"]
    paths = [p.path for p in validate(raw)]
    assert paths == ["spec.tasks[1].template.spec.containers[0].image"]
