"""Bad specs, one field each: validation names the field path, the bad value and what is
allowed."""

from typing import Any

import pytest

from flexjob.api.load import job_from_dict
from flexjob.api.problems import Problem
from flexjob.api.validate import platform_problems, validate
from tests.api.specs import Edit, drop, edited, rename, set_

W = "spec.replicaSpecs.worker"
C0 = f"{W}.template.spec.containers[0]"

# (case id, edits, expected path, fragment of the message)
BAD_JOBS: list[tuple[str, list[Edit], str, str]] = [
    (
        "clean-pod-policy",
        [set_("spec.cleanPodPolicy", "Sometimes")],
        "spec.cleanPodPolicy",
        "'Sometimes' is not one of Running, All, None",
    ),
    (
        "restart-policy",
        [set_(f"{W}.restartPolicy", "Maybe")],
        f"{W}.restartPolicy",
        "is not one of Never, OnFailure, Always, ExitCode",
    ),
    (
        "priority",
        [set_("spec.priority", "urgent")],
        "spec.priority",
        "is not one of low, normal, high",
    ),
    (
        "strategy",
        [set_("spec.distributionStrategy", "Allreduce")],
        "spec.distributionStrategy",
        "did you mean 'AllreduceStrategy'",
    ),
    (
        "optimize-mode",
        [set_("spec.optimizeMode", "auto")],
        "spec.optimizeMode",
        "is not one of manual, single-job, cluster",
    ),
    (
        "replica-type",
        [set_("spec.replicaSpecs.workr", {})],
        "spec.replicaSpecs.workr",
        "did you mean 'worker'",
    ),
    ("unknown-spec-field", [set_("spec.replcas", 3)], "spec.replcas", "unknown field 'replcas'"),
    ("unknown-replica-field", [set_(f"{W}.replica", 3)], f"{W}.replica", "did you mean 'replicas'"),
    ("unknown-top-field", [set_("specs", {})], "specs", "did you mean 'spec'"),
    (
        "unknown-dataset-field",
        [set_("spec.dataset", {"shardsize": 10})],
        "spec.dataset.shardsize",
        "did you mean 'shardSize'",
    ),
    (
        "unknown-batch-field",
        [set_("spec.batch", {"globalBatch": 10})],
        "spec.batch.globalBatch",
        "did you mean 'globalBatchSize'",
    ),
    ("negative-replicas", [set_(f"{W}.replicas", -1)], f"{W}.replicas", "below the minimum 0"),
    ("negative-min", [set_(f"{W}.minReplicas", -2)], f"{W}.minReplicas", "below the minimum 0"),
    ("negative-max", [set_(f"{W}.maxReplicas", -3)], f"{W}.maxReplicas", "below the minimum 0"),
    (
        "min-above-max",
        [set_(f"{W}.minReplicas", 5)],
        f"{W}.minReplicas",
        "5 is above spec.replicaSpecs.worker.maxReplicas (4)",
    ),
    ("replicas-above-max", [set_(f"{W}.replicas", 9)], f"{W}.replicas", "9 is above"),
    ("replicas-below-min", [set_(f"{W}.minReplicas", 3)], f"{W}.replicas", "2 is below"),
    ("replicas-not-int", [set_(f"{W}.replicas", "two")], f"{W}.replicas", "not a whole number"),
    (
        "negative-backoff",
        [set_("spec.backoffLimit", -1)],
        "spec.backoffLimit",
        "-1 is below the minimum 0",
    ),
    (
        "negative-deadline",
        [set_("spec.activeDeadlineSeconds", -5)],
        "spec.activeDeadlineSeconds",
        "below the minimum 0",
    ),
    (
        "negative-ttl",
        [set_("spec.ttlSecondsAfterFinished", -5)],
        "spec.ttlSecondsAfterFinished",
        "below the minimum 0",
    ),
    (
        "negative-restart-count",
        [set_(f"{W}.restartCount", -1)],
        f"{W}.restartCount",
        "below the minimum 0",
    ),
    ("name-uppercase", [set_("metadata.name", "MNIST")], "metadata.name", "not a DNS-1123 label"),
    ("name-underscore", [set_("metadata.name", "mnist_job")], "metadata.name", "DNS-1123"),
    ("name-too-long", [set_("metadata.name", "a" * 64)], "metadata.name", "63 characters"),
    ("name-trailing-dash", [set_("metadata.name", "mnist-")], "metadata.name", "DNS-1123"),
    ("name-missing", [drop("metadata.name")], "metadata.name", "a name is required"),
    ("namespace-bad", [set_("metadata.namespace", "My NS")], "metadata.namespace", "DNS-1123"),
    (
        "no-worker-like",
        [set_("spec.replicaSpecs", {"ps": {}})],
        "spec.replicaSpecs",
        "at least one of chief, collector, learner, worker",
    ),
    (
        "no-replica-specs",
        [drop("spec.replicaSpecs")],
        "spec.replicaSpecs",
        "a job needs replicas that train",
    ),
    ("no-image", [drop(f"{C0}.image")], f"{C0}.image", "a container needs an image"),
    ("empty-image", [set_(f"{C0}.image", " ")], f"{C0}.image", "needs an image"),
    (
        "no-containers",
        [set_(f"{W}.template.spec.containers", [])],
        f"{W}.template.spec.containers",
        "at least one container",
    ),
    (
        "bad-cpu",
        [set_(f"{C0}.resources.requests.cpu", "lots")],
        f"{C0}.resources.requests.cpu",
        "'lots' is not a Kubernetes quantity",
    ),
    (
        "bad-memory-suffix",
        [set_(f"{C0}.resources.requests.memory", "1GB")],
        f"{C0}.resources.requests.memory",
        "not a Kubernetes quantity",
    ),
    (
        "negative-limit",
        [set_(f"{C0}.resources.limits", {"cpu": "-1"})],
        f"{C0}.resources.limits.cpu",
        "negative",
    ),
    (
        "bad-resource-limits",
        [set_("spec.resourceLimits", {"memory": "twelve"})],
        "spec.resourceLimits.memory",
        "not a Kubernetes quantity",
    ),
    (
        "job-arg-name",
        [set_("spec.jobArgs", {"Batch-Size": "64"})],
        "spec.jobArgs.Batch-Size",
        "not an argument name",
    ),
    (
        "job-arg-empty",
        [set_("spec.jobArgs", {"batch_size": " "})],
        "spec.jobArgs.batch_size",
        "one non-empty line",
    ),
    (
        "job-arg-multiline",
        [set_("spec.jobArgs", {"a": "1\n2"})],
        "spec.jobArgs.a",
        "one non-empty line",
    ),
    (
        "api-version",
        [set_("apiVersion", "flexjob.dev/v1")],
        "apiVersion",
        "did you mean 'flexjob.dev/v1alpha1'",
    ),
    ("kind", [set_("kind", "ElasticJobs")], "kind", "did you mean 'ElasticJob'"),
    (
        "preemptible-not-bool",
        [set_("spec.preemptible", "sometimes")],
        "spec.preemptible",
        "valid boolean",
    ),
    ("envs-not-string", [set_("spec.envs", {"A": ["x"]})], "spec.envs.A", "valid string"),
    (
        "rdzv-port",
        [set_("spec.elasticPolicy", {"rdzvPort": 70000})],
        "spec.elasticPolicy.rdzvPort",
        "above the maximum 65535",
    ),
    (
        "nproc",
        [set_("spec.elasticPolicy", {"nProcPerNode": 0})],
        "spec.elasticPolicy.nProcPerNode",
        "below the minimum 1",
    ),
    (
        "container-port",
        [set_(f"{C0}.ports", [{"name": "x"}])],
        f"{C0}.ports[0].containerPort",
        "required field is missing",
    ),
    (
        "env-name",
        [set_(f"{C0}.env", [{"value": "1"}])],
        f"{C0}.env[0].name",
        "required field is missing",
    ),
    (
        "containers-misspelled",
        [rename(f"{W}.template.spec.containers", "containres")],
        f"{W}.template.spec.containers",
        "is 'containres' a misspelling of 'containers'?",
    ),
    (
        "image-misspelled",
        [rename(f"{C0}.image", "imagee")],
        f"{C0}.image",
        "is 'imagee' a misspelling of 'image'?",
    ),
    (
        "replicas-misspelled",
        [rename(f"{W}.replicas", "replics")],
        f"{W}.replics",
        "unknown field 'replics'; did you mean 'replicas'?",
    ),
    (
        "quantity-of-wrong-type",
        [set_(f"{C0}.resources.limits", {"cpu": [1]})],
        f"{C0}.resources.limits.cpu",
        "[1] is not one of the types str, int, float",
    ),
    (
        "replicas-zero-for-a-worker-only-job",
        [set_(f"{W}.replicas", 0), set_(f"{W}.minReplicas", 0)],
        f"{W}.replicas",
        "0 leaves the job with no replica that trains: give at least 1",
    ),
    (
        "replicas-boolean",
        [set_(f"{W}.replicas", True)],
        f"{W}.replicas",
        "True is not a number: give a whole number",
    ),
    (
        "replicas-a-billion",
        [set_(f"{W}.replicas", 1_000_000_000)],
        f"{W}.replicas",
        "1000000000 is above the maximum 10000",
    ),
    (
        "backoff-limit-boolean",
        [set_("spec.backoffLimit", False)],
        "spec.backoffLimit",
        "False is not a number",
    ),
    (
        "dataset-size-zero",
        [set_("spec.dataset", {"size": 0})],
        "spec.dataset.size",
        "0 is below the minimum 1",
    ),
    (
        "dataset-size-a-billion",
        [set_("spec.dataset", {"size": 10**9})],
        "spec.dataset.size",
        "1000000000 is above the maximum 100000000",
    ),
    (
        "dataset-epochs-zero",
        [set_("spec.dataset", {"size": 10, "epochs": 0})],
        "spec.dataset.epochs",
        "0 is below the minimum 1",
    ),
    (
        "batch-micro-size-boolean",
        [set_("spec.batch", {"microBatchSize": True, "maxWorkers": 2})],
        "spec.batch.microBatchSize",
        "True is not a number",
    ),
    (
        "adaptive-batch-without-bound",
        [set_("spec.batch", {"adaptive": True, "globalBatchSize": 64})],
        "spec.batch.maxGlobalBatchSize",
        "an adaptive batch needs globalBatchSize and maxGlobalBatchSize",
    ),
    (
        "adaptive-batch-bound-below-base",
        [set_("spec.batch", {"adaptive": True, "globalBatchSize": 64, "maxGlobalBatchSize": 32})],
        "spec.batch.maxGlobalBatchSize",
        "must be >= spec.batch.globalBatchSize (64)",
    ),
    (
        "global-batch-not-multiple-of-micro",
        [set_("spec.batch", {"globalBatchSize": 60, "microBatchSize": 8})],
        "spec.batch.globalBatchSize",
        "must be a multiple of spec.batch.microBatchSize (8)",
    ),
    (
        "micro-batch-zero",
        [set_("spec.batch", {"microBatchSize": 0})],
        "spec.batch.microBatchSize",
        "0 is below the minimum 1",
    ),
    (
        "straggler-ratio-not-over-one",
        [set_("spec.stragglers", {"policy": "exclude", "ratio": 1})],
        "spec.stragglers.ratio",
        "greater than 1",
    ),
    (
        "straggler-policy-unknown",
        [set_("spec.stragglers", {"policy": "drop"})],
        "spec.stragglers.policy",
        "'drop' is not one of off, report, exclude",
    ),
    (
        "api-version-of-kind",
        [set_("apiVersion", "flexjob.dev/v1")],
        "apiVersion",
        "for kind ElasticJob: 'flexjob.dev/v1' is not one of flexjob.dev/v1alpha1",
    ),
]


@pytest.mark.parametrize(
    ("edits", "path", "fragment"),
    [pytest.param(e, p, f, id=i) for i, e, p, f in BAD_JOBS],
)
def test_bad_job_is_reported_at_its_field(edits: list[Edit], path: str, fragment: str) -> None:
    problems = validate(edited(*edits))
    matching = [p for p in problems if p.path == path]
    assert matching, f"no problem at {path}: {[str(p) for p in problems]}"
    assert fragment in str(matching[0])
    assert str(matching[0]).startswith(f"{path}: ")


def test_valid_job_has_no_problems() -> None:
    assert validate(edited()) == []


def test_every_problem_is_reported_at_once() -> None:
    doc = edited(
        set_("spec.cleanPodPolicy", "Sometimes"),
        set_("metadata.name", "Bad_Name"),
        drop(f"{C0}.image"),
        set_(f"{W}.replicas", -1),
    )
    paths = {p.path for p in validate(doc)}
    assert {"spec.cleanPodPolicy", "metadata.name", f"{C0}.image", f"{W}.replicas"} <= paths


def test_problem_str_is_path_then_message() -> None:
    (problem,) = validate(edited(set_("spec.cleanPodPolicy", "Sometimes")))
    assert problem == Problem(
        "spec.cleanPodPolicy", "Sometimes", "'Sometimes' is not one of Running, All, None"
    )
    assert str(problem) == "spec.cleanPodPolicy: 'Sometimes' is not one of Running, All, None"


def test_unknown_field_without_close_match_lists_allowed_fields() -> None:
    problems = validate(edited(set_("spec.zzz", 1)))
    assert "allowed: activeDeadlineSeconds" in str(problems[0])


@pytest.mark.parametrize("raw", [[], "text", 3])
def test_non_mapping_document_is_one_problem(raw: Any) -> None:
    assert [p.path for p in validate(raw)] == [""]


def test_unknown_kind_lists_the_known_kinds() -> None:
    (problem,) = validate({"apiVersion": "batch/v1", "kind": "Job"})
    assert problem.path == "kind"
    assert "DIJob" in problem.message and "PyTorchJob" in problem.message


def test_unknown_replica_type_is_not_checked_further() -> None:
    doc = edited(set_("spec.replicaSpecs.wrker", {}))
    assert [p.path for p in validate(doc)] == ["spec.replicaSpecs.wrker"]


def test_generate_name_stands_in_for_a_name() -> None:
    doc = edited(drop("metadata.name"), set_("metadata.generateName", "mnist-"))
    assert validate(doc) == []


def test_bad_generate_name_is_reported() -> None:
    doc = edited(drop("metadata.name"), set_("metadata.generateName", "MNIST-"))
    assert [p.path for p in validate(doc)] == ["metadata.generateName"]


def test_zero_workers_beside_a_master_is_still_no_trainer() -> None:
    doc = edited(set_(f"{W}.replicas", 0), set_(f"{W}.minReplicas", 0))
    doc["spec"]["replicaSpecs"]["master"] = doc["spec"]["replicaSpecs"]["worker"] | {"replicas": 1}
    assert [p.path for p in validate(doc)] == [f"{W}.replicas"]


def test_zero_workers_beside_a_chief_that_trains_is_valid() -> None:
    doc = edited(set_(f"{W}.replicas", 0), set_(f"{W}.minReplicas", 0))
    doc["spec"]["replicaSpecs"]["chief"] = doc["spec"]["replicaSpecs"]["worker"] | {"replicas": 1}
    assert validate(doc) == []


@pytest.mark.parametrize(("platform", "ok"), [("local", False), ("kubernetes", True)])
def test_replica_bound_depends_on_the_platform(platform: str, ok: bool) -> None:
    job = job_from_dict(edited(set_(f"{W}.replicas", 300), set_(f"{W}.maxReplicas", 300)))
    problems = platform_problems(job, platform)
    assert (problems == []) is ok
    if not ok:
        assert [str(p) for p in problems] == [
            f"{W}.maxReplicas: 300 is above the maximum 256 on the local platform"
        ]


def test_a_job_master_rendezvous_of_zero_workers_is_refused_naming_min_replicas() -> None:
    doc = edited(set_(f"{W}.minReplicas", 0), set_("spec.dataset", {"name": "d", "size": 100}))
    assert [str(p) for p in validate(doc)] == [
        f"{W}.minReplicas: must be >= 1: flexjob's job master waits for at least this many "
        "worker replicas before it starts a world (its rendezvous), and 0 would start none"
    ]


def test_min_replicas_zero_is_valid_for_a_job_without_flexjobs_master() -> None:
    assert validate(edited(set_(f"{W}.minReplicas", 0))) == []


def test_a_learner_job_master_is_checked_on_its_learners() -> None:
    doc = edited(set_("spec.dataset", {"name": "d", "size": 100}))
    specs = doc["spec"]["replicaSpecs"]
    specs["learner"] = specs.pop("worker") | {"minReplicas": 0}
    assert [p.path for p in validate(doc)] == ["spec.replicaSpecs.learner.minReplicas"]
