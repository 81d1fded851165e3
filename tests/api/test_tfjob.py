"""Kubeflow's TFJob reader (``api.readers.tfjob``): Chief / Worker / PS / Evaluator become
flexjob's types of the same role, ``runPolicy`` lands in the spec, the strategy is
ParameterServerStrategy when it has PS, and what it does not read is refused naming the
TFJob's own field and the allowed values."""

from typing import Any

import pytest
import yaml

from flexjob.api import DistributionStrategy, ReplicaType
from flexjob.api.load import job_from_dict, load_job
from flexjob.api.problems import SpecError
from flexjob.api.validate import validate
from tests.api.specs import EXAMPLES


def raw() -> dict[str, Any]:
    return dict(yaml.safe_load((EXAMPLES / "tfjob.yaml").read_text()))


def test_the_example_tfjob_reads_as_chief_workers_and_ps() -> None:
    job = load_job(EXAMPLES / "tfjob.yaml")
    counts = {t: s.replicas for t, s in job.spec.replica_specs.items()}
    assert counts == {ReplicaType.CHIEF: 1, ReplicaType.WORKER: 2, ReplicaType.PS: 1}
    assert job.spec.distribution_strategy is DistributionStrategy.PARAMETER_SERVER
    assert job.spec.backoff_limit == 3
    assert validate(job_from_dict(raw()).to_wire()) == []


def test_an_evaluator_is_read() -> None:
    doc = raw()
    doc["spec"]["tfReplicaSpecs"]["Evaluator"] = doc["spec"]["tfReplicaSpecs"]["Chief"]
    assert ReplicaType.EVALUATOR in job_from_dict(doc).spec.replica_specs


@pytest.mark.parametrize(
    ("edit", "path", "says"),
    [
        (
            lambda s: s["tfReplicaSpecs"].update(Master=s["tfReplicaSpecs"]["Chief"]),
            "spec.tfReplicaSpecs.Master",
            "Chief, Worker, PS, Evaluator",
        ),
        (lambda s: s.update(successPolicy="AllWorkers"), "spec.successPolicy", "successPolicy"),
    ],
    ids=["master", "success-policy"],
)
def test_what_is_not_read_is_refused_by_its_tfjob_name(edit: Any, path: str, says: str) -> None:
    doc = raw()
    edit(doc["spec"])
    with pytest.raises(SpecError) as info:
        job_from_dict(doc)
    [problem] = info.value.problems
    assert problem.path == path and says in str(problem), str(problem)
