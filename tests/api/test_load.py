"""Loading specs of every supported format: detection, lossless conversion, round trips and
the problems each reader reports in its own format's paths."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from flexjob.api import ElasticJob, ReplicaBounds, ReplicaType, SpecError, replica_bounds
from flexjob.api.bounds import DI_MAX_REPLICAS
from flexjob.api.load import dump_yaml, job_from_dict, load_job, load_scale_plan
from flexjob.api.readers.elasticdl_args import ARGUMENTS
from tests.api.specs import EXAMPLES, JOB_EXAMPLES


def _problems(source: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_job(source)
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize("path", JOB_EXAMPLES, ids=lambda p: p.name)
def test_example_converts_and_round_trips(path: Path) -> None:
    job = load_job(path)
    text = dump_yaml(job.to_wire())
    assert load_job(text) == job


@pytest.mark.parametrize("path", JOB_EXAMPLES, ids=lambda p: p.name)
def test_example_path_string_loads_like_path(path: Path) -> None:
    assert load_job(str(path)) == load_job(path.read_text())


def test_scale_plan_example_loads() -> None:
    plan = load_scale_plan(EXAMPLES / "scaleplan.yaml")
    assert plan.spec.owner_job == "mnist-elastic"
    assert plan.spec.replica_resource_specs[ReplicaType.WORKER].replicas == 3


def test_dijob_v2_tasks_become_replica_specs_with_names() -> None:
    job = load_job(EXAMPLES / "dijob-v2.yaml")
    specs = job.spec.replica_specs
    assert [str(t) for t in specs] == ["learner", "collector", "evaluator"]
    assert specs[ReplicaType.COLLECTOR].replicas == 2
    assert specs[ReplicaType.COLLECTOR].name == "collector"
    assert job.spec.backoff_limit == 3 and job.spec.preemptible is False
    assert job.spec.volumes[0]["emptyDir"] == {"medium": "Memory", "sizeLimit": "128Mi"}


def test_dijob_v2_none_task_becomes_worker() -> None:
    raw = yaml.safe_load((EXAMPLES / "dijob-v2.yaml").read_text())
    raw["spec"]["tasks"][2]["type"] = "none"
    job = job_from_dict(raw)
    assert ReplicaType.WORKER in job.spec.replica_specs


def test_dijob_v2_bad_task_type_names_the_allowed_types() -> None:
    raw = yaml.safe_load((EXAMPLES / "dijob-v2.yaml").read_text())
    raw["spec"]["tasks"][0]["type"] = "lerner"
    with pytest.raises(SpecError) as info:
        job_from_dict(raw)
    assert str(info.value.problems[0]) == (
        "spec.tasks[0].type: 'lerner' is not one of learner, collector, evaluator, none; "
        "did you mean 'learner'?"
    )


def test_dijob_v1_keeps_priority_class_and_aggregator_config() -> None:
    job = load_job(EXAMPLES / "dijob-v1.yaml")
    assert job.spec.priority_class_name == "default"
    assert set(job.spec.replica_specs) == {
        ReplicaType.COORDINATOR,
        ReplicaType.COLLECTOR,
        ReplicaType.LEARNER,
        ReplicaType.AGGREGATOR,
    }
    config = job.spec.aggregator_config
    assert config is not None
    assert config["metadata"]["name"] == "aggregator-config"
    container = config["spec"]["aggregator"]["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 22272, "name": "di-port"}]


def test_dijob_v1_templates_are_recipes_one_coordinator_and_the_rest_on_request() -> None:
    specs = load_job(EXAMPLES / "dijob-v1.yaml").spec.replica_specs
    assert replica_bounds(specs[ReplicaType.COORDINATOR]) == ReplicaBounds(1, 1, 1)
    for rtype in (ReplicaType.COLLECTOR, ReplicaType.LEARNER, ReplicaType.AGGREGATOR):
        assert replica_bounds(specs[rtype]) == ReplicaBounds(0, 0, DI_MAX_REPLICAS)
    aggregator = specs[ReplicaType.AGGREGATOR].template.spec.containers[0]
    assert aggregator.ports[0].container_port == 22272


def test_dijob_v1_without_coordinator_is_rejected() -> None:
    raw = yaml.safe_load_all((EXAMPLES / "dijob-v1.yaml").read_text())
    job = next(iter(raw))
    del job["spec"]["coordinator"]
    with pytest.raises(SpecError) as info:
        job_from_dict(job)
    assert str(info.value.problems[0]) == "spec.coordinator: required field is missing"


def test_elasticdl_job_args_become_a_mapping() -> None:
    job = load_job(EXAMPLES / "elasticaijob.yaml")
    assert job.spec.job_args["minibatch_size"] == "64"
    assert job.spec.job_args["model_zoo"] == "/model_zoo"
    assert [str(t) for t in job.spec.replica_specs] == ["master", "ps", "worker"]
    assert job.spec.replica_specs[ReplicaType.WORKER].replicas == 10


@pytest.mark.parametrize("arg", ["-minibatch_size 64", "--MiniBatch 64", "--minibatch_size"])
def test_elasticdl_bad_job_arg_is_reported_at_its_index(arg: str) -> None:
    raw = yaml.safe_load((EXAMPLES / "elasticaijob.yaml").read_text())
    raw["spec"]["jobArgs"][1] = arg
    with pytest.raises(SpecError) as info:
        job_from_dict(raw)
    assert info.value.problems[0].path == "spec.jobArgs[1]"
    assert "'--name value'" in info.value.problems[0].message


def test_elasticdl_repeated_job_arg_is_rejected() -> None:
    raw = yaml.safe_load((EXAMPLES / "elasticaijob.yaml").read_text())
    raw["spec"]["jobArgs"].append("--minibatch_size 32")
    with pytest.raises(SpecError) as info:
        job_from_dict(raw)
    assert "given twice" in str(info.value)


def test_dlrover_job_keeps_its_replica_and_job_fields() -> None:
    job = load_job(EXAMPLES / "dlrover-elasticjob.yaml")
    assert set(job.spec.replica_specs) == {ReplicaType.PS, ReplicaType.WORKER}
    assert job.spec.enable_dynamic_sharding is True
    assert job.spec.envs == {"TF_LOG_LEVEL": "2", "DATA_DIR": "/data/criteo"}
    assert job.spec.brain_service == "dlrover-brain.dlrover.svc.cluster.local:50001"


def test_dlrover_env_with_value_from_is_rejected() -> None:
    raw = yaml.safe_load((EXAMPLES / "dlrover-elasticjob.yaml").read_text())
    raw["spec"]["envs"]["DATA_DIR"] = {"name": "DATA_DIR", "valueFrom": {"fieldRef": {}}}
    with pytest.raises(SpecError) as info:
        job_from_dict(raw)
    assert info.value.problems[0].path == "spec.envs.DATA_DIR"


def test_pytorchjob_elastic_policy_bounds_go_to_the_worker() -> None:
    job = load_job(EXAMPLES / "pytorchjob.yaml")
    worker = job.spec.replica_specs[ReplicaType.WORKER]
    assert (worker.replicas, worker.min_replicas, worker.max_replicas) == (4, 2, 8)
    policy = job.spec.elastic_policy
    assert policy is not None
    assert (policy.rdzv_backend, policy.n_proc_per_node, policy.max_restarts) == ("c10d", 2, 100)
    assert job.spec.backoff_limit == 5


def test_pytorchjob_master_becomes_chief() -> None:
    raw = yaml.safe_load((EXAMPLES / "pytorchjob.yaml").read_text())
    spec = raw["spec"]["pytorchReplicaSpecs"]
    spec["Master"] = spec["Worker"]
    assert ReplicaType.CHIEF in job_from_dict(raw).spec.replica_specs


def test_pytorchjob_unknown_replica_type_suggests_one() -> None:
    raw = yaml.safe_load((EXAMPLES / "pytorchjob.yaml").read_text())
    spec = raw["spec"]["pytorchReplicaSpecs"]
    spec["Workers"] = spec.pop("Worker")
    with pytest.raises(SpecError) as info:
        job_from_dict(raw)
    assert str(info.value.problems[0]).startswith(
        "spec.pytorchReplicaSpecs.Workers: 'Workers' is not one of Master, Worker"
    )


def _source_problem_paths(name: str, edit: Callable[[dict[str, Any]], None]) -> list[str]:
    raw = next(iter(yaml.safe_load_all((EXAMPLES / name).read_text())))
    edit(raw)
    with pytest.raises(SpecError) as info:
        job_from_dict(raw)
    return [p.path for p in info.value.problems]


def test_pytorchjob_problems_name_the_pytorchjob_fields() -> None:
    def edit(raw: dict[str, Any]) -> None:
        del raw["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0][
            "image"
        ]
        raw["spec"]["elasticPolicy"]["minReplicas"] = 9

    assert _source_problem_paths("pytorchjob.yaml", edit) == [
        "spec.elasticPolicy.minReplicas",
        "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image",
    ]


def test_dijob_v2_problems_name_the_task() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["spec"]["tasks"][1]["template"]["spec"]["containers"][0]["resources"] = {
            "requests": {"cpu": "two"}
        }

    assert _source_problem_paths("dijob-v2.yaml", edit) == [
        "spec.tasks[1].template.spec.containers[0].resources.requests.cpu"
    ]


def test_elasticdl_problems_name_the_capitalised_role() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["spec"]["PS"]["template"]["spec"]["containers"] = []

    assert _source_problem_paths("elasticaijob.yaml", edit) == ["spec.PS.template.spec.containers"]


def test_dijob_v1_problems_name_the_role() -> None:
    def edit(raw: dict[str, Any]) -> None:
        del raw["spec"]["learner"]["template"]["spec"]["containers"][0]["image"]

    assert _source_problem_paths("dijob-v1.yaml", edit) == [
        "spec.learner.template.spec.containers[0].image"
    ]


def test_yaml_syntax_error_reports_line_and_column() -> None:
    text = "apiVersion: flexjob.dev/v1alpha1\nkind: ElasticJob\nmetadata:\n  name: [a\n"
    (message,) = _problems(text)
    assert message.startswith("line 5, column 1: YAML syntax error")


def test_yaml_bad_indent_reports_its_line() -> None:
    text = "kind: ElasticJob\nspec:\n  a: 1\n b: 2\n"
    (message,) = _problems(text)
    assert message.startswith("line 4, column 2:")


def test_file_with_two_jobs_is_rejected() -> None:
    one = (EXAMPLES / "elasticjob.yaml").read_text()
    (message,) = _problems(one + "\n---\n" + one)
    assert "expected one job document, found 2" in message


def test_empty_text_is_rejected() -> None:
    assert _problems("\n") == ["no document found"]


def test_scale_plan_is_not_a_job() -> None:
    (message,) = _problems(str(EXAMPLES / "scaleplan.yaml"))
    assert message.startswith("kind: expected a job")


def test_to_wire_leaves_out_empty_defaults() -> None:
    wire = load_job(EXAMPLES / "elasticjob.yaml").to_wire()
    assert "status" not in wire
    assert "volumes" not in wire["spec"]
    assert "finalizers" not in wire["metadata"]
    assert (
        "ports" not in wire["spec"]["replicaSpecs"]["worker"]["template"]["spec"]["containers"][0]
    )
    assert ElasticJob.model_validate(wire) == load_job(EXAMPLES / "elasticjob.yaml")


def _values(node: Any) -> set[str]:
    """Every scalar of a document, as text."""
    if isinstance(node, dict):
        return {s for v in node.values() for s in _values(v)}
    if isinstance(node, list):
        return {s for v in node for s in _values(v)}
    return {str(node)}


def _translated(arg: str, values: set[str]) -> bool:
    """``arg`` (``--name value``) is an ElasticDL argument whose value reached ``values`` or
    that maps to no setting."""
    name, _, value = arg.partition(" ")
    rule = ARGUMENTS.get(name.removeprefix("--")) if name.startswith("--") else None
    if rule is None or rule.translate is None:
        return False
    return value in values or rule.translate(value) == []


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(map(str, node)) | {s for v in node.values() for s in _keys(v)}
    if isinstance(node, list):
        return {s for v in node for s in _keys(v)}
    return set()


@pytest.mark.parametrize("path", JOB_EXAMPLES, ids=lambda p: p.name)
def test_conversion_keeps_every_value_of_the_source(path: Path) -> None:
    docs = list(yaml.safe_load_all(path.read_text()))
    source = set().union(*(_values({k: v for k, v in d.items() if k != "kind"}) for d in docs))
    wire = load_job(path).to_wire()
    job_args = {f"--{k} {v}" for k, v in wire["spec"].get("jobArgs", {}).items()}
    # ElasticDL arguments flexjob's master took: their value is in the job, or they say what
    # flexjob does anyway (no setting: --grads_to_wait 1)
    translated = {a for a in source if _translated(a, _values(wire))}
    # a value may become a key (a DI task type names its replica spec)
    lost = source - _values(wire) - _keys(wire) - job_args - translated
    assert lost <= {docs[0]["apiVersion"]}, lost


def test_missing_file_is_a_problem_not_yaml(tmp_path: Path) -> None:
    (message,) = _problems(str(tmp_path / "job.yaml"))
    assert message.startswith(f"cannot read {tmp_path / 'job.yaml'}")
