"""No silent spec fields: every field a supported format carries either acts (checked on the
rendered replicas) or is rejected at validation naming the field and saying flexjob does not
support it."""

from typing import Any

import pytest
import yaml

from flexjob.api import ElasticJob, ReplicaType, SpecError
from flexjob.api.load import job_from_dict
from flexjob.api.validate import validate
from flexjob.core.operator.job_master import JobMasterConfig, needs_job_master, with_job_master
from flexjob.core.operator.replica_plan import render_replica
from tests.api.specs import EXAMPLES, set_, valid_job

W = "spec.replicaSpecs.worker"


def _example(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = next(iter(yaml.safe_load_all((EXAMPLES / name).read_text())))
    return doc


def _native(*edits: Any) -> dict[str, Any]:
    doc = valid_job()
    for edit in edits:
        edit(doc)
    return doc


def _dlrover(path: str, value: Any) -> dict[str, Any]:
    doc = _example("dlrover-elasticjob.yaml")
    set_(path, value)(doc)
    return doc


def _pytorchjob(path: str, value: Any) -> dict[str, Any]:
    doc = _example("pytorchjob.yaml")
    set_(path, value)(doc)
    return doc


def _dijob_v1(path: str, value: Any) -> dict[str, Any]:
    doc = _example("dijob-v1.yaml")
    set_(path, value)(doc)
    return doc


# (case id, document, the field path the user sees)
UNSUPPORTED: list[tuple[str, dict[str, Any], str]] = [
    ("native-group", _native(set_("spec.group", "g")), "spec.group"),
    (
        "native-resource-limits",
        _native(set_("spec.resourceLimits", {"cpu": "4"})),
        "spec.resourceLimits",
    ),
    ("native-restart-count", _native(set_(f"{W}.restartCount", 3)), f"{W}.restartCount"),
    ("native-restart-timeout", _native(set_(f"{W}.restartTimeout", 60)), f"{W}.restartTimeout"),
    ("native-auto-scale", _native(set_(f"{W}.autoScale", True)), f"{W}.autoScale"),
    ("native-replica-priority", _native(set_(f"{W}.priority", "high")), f"{W}.priority"),
    (
        "dlrover-resource-limits",
        _dlrover("spec.resourceLimits", {"cpu": "15"}),
        "spec.resourceLimits",
    ),
    (
        "dlrover-restart-count",
        _dlrover("spec.replicaSpecs.ps.restartCount", 3),
        "spec.replicaSpecs.ps.restartCount",
    ),
    (
        "dlrover-restart-timeout",
        _dlrover("spec.replicaSpecs.worker.restartTimeout", 600),
        "spec.replicaSpecs.worker.restartTimeout",
    ),
    (
        "dlrover-auto-scale",
        _dlrover("spec.replicaSpecs.worker.autoScale", False),
        "spec.replicaSpecs.worker.autoScale",
    ),
    (
        "dlrover-replica-priority",
        _dlrover("spec.replicaSpecs.ps.priority", "high"),
        "spec.replicaSpecs.ps.priority",
    ),
    ("dijob-v1-group", _dijob_v1("spec.group", "cartpole"), "spec.group"),
    *[
        (
            f"native-elastic-policy-{key}",
            _native(set_("spec.elasticPolicy", {"rdzvBackend": "flexjob", key: value})),
            f"spec.elasticPolicy.{key}",
        )
        for key, value in [
            ("rdzvHost", "10.0.0.1"),
            ("rdzvPort", 29400),
            ("rdzvId", "abc"),
            ("rdzvConf", [{"key": "join_timeout", "value": "900"}]),
            ("standalone", True),
            ("metrics", [{"type": "Resource"}]),
        ]
    ],
    (
        "native-scheduling-policy",
        _native(set_("spec.schedulingPolicy", {"minAvailable": 2})),
        "spec.schedulingPolicy",
    ),
    (
        "pytorchjob-scheduling-policy",
        _pytorchjob("spec.runPolicy.schedulingPolicy", {"minAvailable": 2, "queue": "q"}),
        "spec.runPolicy.schedulingPolicy",
    ),
    (
        "pytorchjob-metrics",
        _pytorchjob("spec.elasticPolicy.metrics", [{"type": "Resource"}]),
        "spec.elasticPolicy.metrics",
    ),
    (
        "pytorchjob-rdzv-conf",
        _pytorchjob("spec.elasticPolicy.rdzvConf", [{"key": "timeout", "value": "900"}]),
        "spec.elasticPolicy.rdzvConf",
    ),
    (
        "dlrover-enable-elastic-scheduling",
        _dlrover("spec.enableElasticScheduling", True),
        "spec.enableElasticScheduling",
    ),
]


@pytest.mark.parametrize(
    ("doc", "path"), [c[1:] for c in UNSUPPORTED], ids=[c[0] for c in UNSUPPORTED]
)
def test_an_unsupported_field_is_rejected_naming_it(doc: dict[str, Any], path: str) -> None:
    problems = [p for p in validate(doc) if p.path == path]
    assert len(problems) == 1, validate(doc)
    assert "flexjob does not support" in problems[0].message
    with pytest.raises(SpecError, match="flexjob does not support"):
        job_from_dict(doc)


def test_the_examples_carry_no_unsupported_field() -> None:
    for name in (
        "dlrover-elasticjob.yaml",
        "dijob-v1.yaml",
        "elasticaijob.yaml",
        "pytorchjob.yaml",
        "elasticjob.yaml",
        "digits-elastic.yaml",
    ):
        assert validate(_example(name)) == [], name


def _replica_pod(job: ElasticJob, rtype: ReplicaType) -> Any:
    return render_replica(job, rtype, 0, master_address=None, own_address=None, node=None).template


def test_dijob_volumes_are_shared_by_every_replica_and_a_replicas_own_wins() -> None:
    doc = _example("dijob-v1.yaml")
    own = {"name": "work-dir", "emptyDir": {}}
    doc["spec"]["learner"]["template"]["spec"]["volumes"] = [own]
    job = job_from_dict(doc)
    shared = {"name": "work-dir", "hostPath": {"path": "/data/nfs/ding/cartpole"}}
    assert _replica_pod(job, ReplicaType.COORDINATOR).spec.volumes == [shared]
    assert _replica_pod(job, ReplicaType.COLLECTOR).spec.volumes == [shared]
    assert _replica_pod(job, ReplicaType.LEARNER).spec.volumes == [own]


def test_priority_class_name_reaches_every_pod_unless_its_template_names_one() -> None:
    doc = _example("dijob-v1.yaml")
    doc["spec"]["learner"]["template"]["spec"]["priorityClassName"] = "gpu-high"
    job = job_from_dict(doc)
    pods = {t: _replica_pod(job, t) for t in job.spec.replica_specs}
    assert pods[ReplicaType.COORDINATOR].to_wire()["spec"]["priorityClassName"] == "default"
    assert pods[ReplicaType.COLLECTOR].spec.priority_class_name == "default"
    assert pods[ReplicaType.LEARNER].spec.priority_class_name == "gpu-high"


def _dlrover_allreduce() -> dict[str, Any]:
    doc = _example("dlrover-elasticjob.yaml")
    doc["spec"]["distributionStrategy"] = "AllreduceStrategy"
    del doc["spec"]["replicaSpecs"]["ps"]
    return doc


def test_dlrover_elastic_job_gets_a_job_master() -> None:
    job = job_from_dict(_dlrover_allreduce())
    assert needs_job_master(job)
    with_master = with_job_master(job, JobMasterConfig())
    assert ReplicaType.MASTER in with_master.spec.replica_specs
    opted_out = _dlrover_allreduce()
    opted_out["spec"]["enableDynamicSharding"] = False
    problems = validate(opted_out)
    # no master: no brain client, no optimizer
    assert [p.path for p in problems] == ["spec.brainService", "spec.optimizeMode"]
    del opted_out["spec"]["brainService"]
    opted_out["spec"]["optimizeMode"] = "manual"
    assert not needs_job_master(job_from_dict(opted_out))


_NO_MASTER = "only flexjob's job master acts on it, and this job has none"
_OWN_MASTER = "only flexjob's job master acts on it, and this job runs its own master"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("stragglers", {"policy": "exclude"}),
        ("brainService", "brain:50001"),
    ],
)
def test_a_master_only_field_on_a_job_without_flexjobs_master_is_rejected(
    field: str, value: Any
) -> None:
    doc = _native(set_(f"spec.{field}", value))
    problems = validate(doc)
    assert [p.path for p in problems] == [f"spec.{field}"]
    assert problems[0].message.startswith(_NO_MASTER)
    with_master = _native(
        set_(f"spec.{field}", value), set_("spec.elasticPolicy", {"rdzvBackend": "flexjob"})
    )
    assert validate(with_master) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("dataset", {"size": 100}),
        ("batch", {"globalBatchSize": 64, "microBatchSize": 8}),
        ("stragglers", {"policy": "exclude"}),
        ("brainService", "brain:50001"),
    ],
)
def test_a_master_only_field_on_a_job_with_its_own_master_is_rejected(
    field: str, value: Any
) -> None:
    own_master = {
        "replicas": 1,
        "template": {
            "spec": {
                "containers": [
                    {"name": "main", "image": "my/master:1", "command": ["python", "my_master.py"]}
                ]
            }
        },
    }
    doc = _native(set_("spec.replicaSpecs.master", own_master), set_(f"spec.{field}", value))
    problems = validate(doc)
    assert [p.path for p in problems] == [f"spec.{field}"]
    assert problems[0].message.startswith(_OWN_MASTER)


def _agent_config(env: dict[str, str], tmp_path: Any, monkeypatch: Any) -> Any:
    """The AgentConfig ``flexjob agent SCRIPT`` builds in a replica with ``env``."""
    from typer.testing import CliRunner

    from flexjob.agent import process
    from flexjob.cli.main import app

    seen: list[Any] = []
    monkeypatch.setattr(process, "run_node", lambda config, spare_dir: seen.append(config) or 0)
    script = tmp_path / "train.py"
    script.write_text("")
    result = CliRunner().invoke(app, ["agent", str(script)], env=env)
    assert result.exit_code == 0, result.output
    return seen[0]


def test_elastic_policy_nprocs_and_max_restarts_reach_the_workers_agent(
    tmp_path: Any, monkeypatch: Any
) -> None:
    doc = _native(
        set_("spec.elasticPolicy", {"rdzvBackend": "flexjob", "nProcPerNode": 3, "maxRestarts": 7})
    )
    job = job_from_dict(doc)
    worker = render_replica(
        job, ReplicaType.WORKER, 0, master_address="127.0.0.1:1", own_address=None, node=None
    )
    config = _agent_config(worker.env, tmp_path, monkeypatch)
    assert (config.nproc_per_node, config.max_restarts) == (3, 7)
    job_master = with_job_master(job_from_dict(doc), JobMasterConfig())
    master = render_replica(
        job_master, ReplicaType.MASTER, 0, master_address=None, own_address=None, node=None
    )
    assert "FLEXJOB_NPROC_PER_NODE" not in master.env


def test_without_an_elastic_policy_the_agent_keeps_its_defaults(
    tmp_path: Any, monkeypatch: Any
) -> None:
    job = job_from_dict(_native(set_("spec.enableDynamicSharding", True)))  # flexjob's master
    worker = render_replica(
        job, ReplicaType.WORKER, 0, master_address="127.0.0.1:1", own_address=None, node=None
    )
    config = _agent_config(worker.env, tmp_path, monkeypatch)
    assert (config.nproc_per_node, config.max_restarts) == (1, 3)


def test_a_strategy_the_replicas_contradict_is_rejected() -> None:
    no_ps = validate(_native(set_("spec.distributionStrategy", "ParameterServerStrategy")))
    assert [p.path for p in no_ps] == ["spec.distributionStrategy"]
    assert "needs parameter servers" in no_ps[0].message
    ps = {"replicas": 1, "template": {"spec": {"containers": [{"name": "ps", "image": "i"}]}}}
    with_ps = validate(
        _native(
            set_("spec.distributionStrategy", "AllreduceStrategy"),
            set_("spec.replicaSpecs.ps", ps),
        )
    )
    assert [p.path for p in with_ps] == ["spec.distributionStrategy"]
    assert "runs parameter servers" in with_ps[0].message
    dlrover = _dlrover("spec.distributionStrategy", "AllreduceStrategy")  # it has ps replicas
    assert [p.path for p in validate(dlrover)] == ["spec.distributionStrategy"]
    for strategy in ("AllreduceStrategy", "Custom"):
        assert validate(_native(set_("spec.distributionStrategy", strategy))) == []


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("batch", {"globalBatchSize": 64}, "spec.batch.microBatchSize"),
        ("batch", {"microBatchSize": 8}, "spec.batch"),
        ("dataset", {"name": "train"}, "spec.dataset"),
        ("dataset", {"size": 10, "files": ["a.csv"]}, "spec.dataset"),
    ],
)
def test_a_dataset_or_batch_the_master_cannot_build_is_rejected_at_submit(
    field: str, value: Any, path: str
) -> None:
    """Before, these passed validation and the master's config raised when the operator
    rendered the master."""
    doc = _native(set_(f"spec.{field}", value))
    assert [p.path for p in validate(doc)] == [path]
    with pytest.raises(SpecError):
        job_from_dict(doc)
    ok = {"batch": {"globalBatchSize": 64, "maxWorkers": 4}, "dataset": {"size": 10}}[field]
    assert validate(_native(set_(f"spec.{field}", ok))) == []


def test_scale_plan_fields_flexjob_would_drop_are_rejected_naming_them() -> None:
    plan = _example("scaleplan.yaml")
    assert validate(plan) == []
    plan["spec"]["migratePods"][0]["rankIndex"] = 1
    plan["spec"]["createPods"] = [{"type": "worker", "resource": {"memory": 4096}}]
    problems = validate(plan)
    assert sorted(p.path for p in problems) == [
        "spec.createPods[0].resource",
        "spec.migratePods[0].rankIndex",
    ]
    assert all("flexjob does not support" in p.message for p in problems)


def _dijob_v1_native() -> dict[str, Any]:
    """The example DIJob v1 (with its AggregatorConfig) as the ElasticJob flexjob stores and
    the admission webhook checks: converted, defaulted."""
    from flexjob.api.defaults import apply_defaults
    from flexjob.api.load import load_job

    wire: dict[str, Any] = apply_defaults(load_job(EXAMPLES / "dijob-v1.yaml")).to_wire()
    return wire


def test_a_converted_dijob_v1_keeps_its_aggregator_config_as_a_valid_record() -> None:
    job = _dijob_v1_native()
    assert job["spec"]["aggregatorConfig"]["metadata"]["name"] == "aggregator-config"
    assert validate(job) == []


def test_an_aggregator_config_written_on_an_elastic_job_is_rejected_naming_it() -> None:
    """Nothing reads spec.aggregatorConfig (the aggregators run from replicaSpecs.aggregator):
    one with no aggregator replicas, or one that says other than what runs, is refused."""
    alone = _native(set_("spec.aggregatorConfig", _dijob_v1_native()["spec"]["aggregatorConfig"]))
    problems = validate(alone)
    assert [p.path for p in problems] == ["spec.aggregatorConfig"]
    assert "nothing reads it" in problems[0].message
    assert "spec.replicaSpecs.aggregator" in problems[0].message

    other = _dijob_v1_native()
    other["spec"]["aggregatorConfig"]["spec"]["aggregator"]["template"]["spec"]["containers"][0][
        "image"
    ] = "my/aggregator:2"
    problems = validate(other)
    assert [p.path for p in problems] == ["spec.aggregatorConfig.spec.aggregator.template"]
    assert "differs from spec.replicaSpecs.aggregator.template" in problems[0].message

    broken = _dijob_v1_native()
    del broken["spec"]["aggregatorConfig"]["spec"]["aggregator"]
    assert [p.path for p in validate(broken)] == ["spec.aggregatorConfig.spec.aggregator"]


@pytest.mark.parametrize("mode", ["single-job", "cluster"])
def test_an_optimize_mode_on_a_job_without_flexjobs_master_is_rejected(mode: str) -> None:
    """Only flexjob's master runs the optimizer: single-job or cluster on a job without it
    would be dropped. manual (no optimizer) is what such a job does, and stays valid."""
    problems = validate(_native(set_("spec.optimizeMode", mode)))
    assert [p.path for p in problems] == ["spec.optimizeMode"]
    assert problems[0].message.startswith("only flexjob's job master runs the optimizer")
    assert validate(_native(set_("spec.optimizeMode", "manual"))) == []
    with_master = _native(
        set_("spec.optimizeMode", mode), set_("spec.elasticPolicy", {"rdzvBackend": "flexjob"})
    )
    assert validate(with_master) == []
