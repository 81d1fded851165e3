"""ElasticDL's ElasticAIJob as its design writes it: the seed's job validates; its own master
image gets the jobArgs on its command line as written; flexjob's master gets them translated
into flexjob's settings or refused by name (the table in docs/elasticdl.md); the pods'
``restartPolicy: Never`` means the operator relaunches; the Workers are elastic."""

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from flexjob.api import ReplicaType, RestartPolicy, names
from flexjob.api.load import job_from_dict
from flexjob.api.readers.elasticdl import flexjob_image
from flexjob.api.readers.elasticdl_args import ARGUMENTS
from flexjob.api.validate import validate
from flexjob.core.operator.job_master import JobMasterConfig, with_job_master
from flexjob.core.operator.replica_plan import render_replica
from tests.api.specs import EXAMPLES, set_, valid_job

DOCS = Path(__file__).resolve().parents[2] / "docs" / "elasticdl.md"


def _seed() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / "elasticaijob.yaml").read_text())
    return doc


def _on_flexjobs_master(*args: str) -> dict[str, Any]:
    """The CTR example (flexjob's Master: flexjob's image, no command) with ``args``."""
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / "elasticdl-ps-ctr.yaml").read_text())
    doc["spec"]["jobArgs"] = list(args)
    return doc


def _problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in validate(doc)]


def test_the_seeds_elasticaijob_validates() -> None:
    assert validate(_seed()) == []


def test_an_own_master_image_gets_the_job_args_on_its_command_line_as_written() -> None:
    doc = _seed()
    job = with_job_master(job_from_dict(doc), JobMasterConfig())
    master = render_replica(
        job, ReplicaType.MASTER, 0, master_address=None, own_address=None, node=None
    )
    written = [part for arg in doc["spec"]["jobArgs"] for part in arg.split(" ", 1)]
    assert list(master.command) == []  # its image's entrypoint reads them
    assert list(master.args) == written  # including the design's own --valiation_data
    assert master.template.spec.containers[0].image == "elasticdl-mnist"


def test_an_own_master_keeps_its_ps_and_workers_in_their_own_images() -> None:
    job = with_job_master(job_from_dict(_seed()), JobMasterConfig())
    for rtype, image in ((ReplicaType.PS, "elasticdl-ps"), (ReplicaType.WORKER, "elasticdl-mnist")):
        [main] = job.spec.replica_specs[rtype].template.spec.containers
        assert (main.image, main.command) == (image, []), rtype


def test_job_args_for_flexjobs_master_become_its_settings() -> None:
    doc = _on_flexjobs_master(
        "--training_data /data/train.csv:10000",
        "--num_epochs 2",
        "--minibatch_size 64",
        "--num_minibatches_per_task 4",
        "--distribution_strategy ParameterServerStrategy",
        "--envs A=1,B=x=y",
        "--checkpoint_dir /ckpt",
        "--grads_to_wait 1",
        "--use_async True",
        "--checkpoint_steps 0",
    )
    assert validate(doc) == []
    spec = job_from_dict(doc).spec
    assert spec.job_args == {}
    assert spec.dataset is not None
    assert (spec.dataset.files, spec.dataset.epochs) == (["/data/train.csv:10000"], 2)
    assert spec.dataset.shard_size == 64 * 4  # ElasticDL's task: minibatches * their size
    assert str(spec.distribution_strategy) == "ParameterServerStrategy"
    assert spec.envs == {
        "A": "1",
        "B": "x=y",
        names.ENV_CHECKPOINT_DIR: "/ckpt",
        names.ENV_PS_CHECKPOINT_DIR: "/ckpt",
    }


@pytest.mark.parametrize("name", sorted(k for k, a in ARGUMENTS.items() if a.translate is None))
def test_an_argument_flexjobs_master_does_not_take_is_refused_by_name(name: str) -> None:
    problems = _problems(_on_flexjobs_master("--grads_to_wait 1", f"--{name} v"))
    assert len(problems) == 1
    path, message = problems[0]
    assert path == "spec.jobArgs[1]"
    assert f"flexjob's master does not take --{name}: " in message


def test_an_argument_elasticdl_does_not_have_is_refused_naming_the_known_ones() -> None:
    [(path, message)] = _problems(_on_flexjobs_master("--valiation_data /v"))
    assert path == "spec.jobArgs[0]"
    assert "--valiation_data is not an ElasticDL argument" in message
    assert "validation_data" in message


@pytest.mark.parametrize(
    "arg, why",
    [
        ("--grads_to_wait 2", "apply each gradient as it arrives"),
        ("--use_async maybe", "must be True or False"),
        ("--checkpoint_steps 100", "checkpoints by time"),
        ("--keep_checkpoint_max 3", "latest checkpoint only"),
        ("--distribution_strategy Local", "ParameterServerStrategy, AllreduceStrategy"),
        ("--envs =1", "NAME=value"),
    ],
)
def test_a_value_flexjobs_master_cannot_honour_is_refused_saying_why(arg: str, why: str) -> None:
    [(path, message)] = _problems(_on_flexjobs_master(arg))
    assert path == "spec.jobArgs[0]"
    assert message.startswith(arg) and why in message


@pytest.mark.parametrize("arg", ["--num_epochs 0", "--minibatch_size x"])
def test_a_bad_dataset_number_is_refused_at_its_argument(arg: str) -> None:
    doc = _on_flexjobs_master("--training_data /d", arg)
    [(path, message)] = _problems(doc)
    assert path == "spec.jobArgs[1]" and arg in message


def test_dataset_arguments_without_training_data_are_refused() -> None:
    [(path, message)] = _problems(_on_flexjobs_master("--grads_to_wait 1", "--num_epochs 3"))
    assert path == "spec.jobArgs[1]"
    assert "add --training_data" in message


def test_job_args_without_a_master_replica_are_rejected() -> None:
    doc = valid_job()
    set_("spec.jobArgs", {"minibatch_size": "64"})(doc)
    [problem] = validate(doc)
    assert problem.path == "spec.jobArgs"
    assert "flexjob's own master does not support them" in problem.message


@pytest.mark.parametrize("rtype, alias", [("ps", "PS"), ("worker", "Worker")])
def test_a_pods_never_means_the_operator_relaunches_the_replica(rtype: str, alias: str) -> None:
    doc = _seed()
    assert doc["spec"][alias]["template"]["spec"]["restartPolicy"] == "Never"
    job = job_from_dict(doc)
    spec = job.spec.replica_specs[ReplicaType(rtype)]
    assert spec.restart_policy is RestartPolicy.ON_FAILURE
    assert spec.template.spec.restart_policy == "Never"  # the pod itself: not the kubelet's


@pytest.mark.parametrize(
    "pod, replica, expected", [("OnFailure", None, "OnFailure"), ("Never", "Never", "Never")]
)
def test_a_pod_policy_other_than_never_or_a_replicas_own_is_kept(
    pod: str, replica: str | None, expected: str
) -> None:
    doc = _seed()
    doc["spec"]["Worker"]["template"]["spec"]["restartPolicy"] = pod
    if replica is not None:
        doc["spec"]["Worker"]["restartPolicy"] = replica
    spec = job_from_dict(doc).spec.replica_specs[ReplicaType.WORKER]
    assert spec.restart_policy is RestartPolicy(expected)


def test_workers_are_elastic_from_one_to_their_replicas() -> None:
    spec = job_from_dict(_seed()).spec.replica_specs[ReplicaType.WORKER]
    assert (spec.min_replicas, spec.replicas, spec.max_replicas) == (1, 10, 10)


def test_workers_take_flexjobs_bounds_when_given() -> None:
    doc = _seed()
    doc["spec"]["Worker"].update(minReplicas=4, maxReplicas=16)
    spec = job_from_dict(doc).spec.replica_specs[ReplicaType.WORKER]
    assert (spec.min_replicas, spec.replicas, spec.max_replicas) == (4, 10, 16)


def test_replicas_outside_the_workers_bounds_are_refused_at_the_workers_field() -> None:
    doc = _seed()
    doc["spec"]["Worker"]["maxReplicas"] = 5
    assert [p for p, _ in _problems(doc)] == ["spec.Worker.replicas"]  # 10 > maxReplicas 5


@pytest.mark.parametrize(
    "image, flexjobs",
    [
        (None, True),
        ("flexjob", True),
        ("flexjob:latest", True),
        ("ghcr.io/org/flexjob:0.3@sha256:ab", True),
        ("elasticdl-mnist", False),
        ("flexjob/examples:mnist-0.1", False),
        ("registry:5000/flexjob-dev:1", False),
    ],
)
def test_flexjobs_image_is_known_by_its_name(image: str | None, flexjobs: bool) -> None:
    assert flexjob_image(image) is flexjobs


def test_a_command_less_master_in_flexjobs_image_is_flexjobs_master() -> None:
    doc = _on_flexjobs_master()
    job = with_job_master(job_from_dict(doc), JobMasterConfig())
    [main] = job.spec.replica_specs[ReplicaType.MASTER].template.spec.containers
    assert main.args[:1] == ["master"]


def test_the_docs_table_names_every_argument_and_only_those() -> None:
    rows = re.findall(r"^\| `([a-z0-9_]+)` \|", DOCS.read_text(), re.MULTILINE)
    assert sorted(rows) == sorted(ARGUMENTS)
