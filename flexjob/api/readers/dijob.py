"""Readers of DI Orchestrator's ``DIJob``: v2 (``tasks`` of type learner, collector, evaluator
or none) and v1 (coordinator, collector, learner, plus the cluster's ``AggregatorConfig``).

Every field the formats carry lands in the ``ElasticJob``: a v2 task becomes the replica spec of
its type (``none`` → ``worker``) and keeps its name; several tasks of one type share it, each
its own replicas, template and name (``api.di_tasks``); a v1 ``AggregatorConfig`` found beside the
job is kept whole in ``spec.aggregatorConfig`` and its template becomes the ``aggregator``
replica spec (without one, the cluster's is used: ``core.operator.logic_learners``). A v1 role's
template is a recipe, not a count: collectors, learners and aggregators start at 0 replicas
and the coordinator asks the server for them (up to ``api.bounds.DI_MAX_REPLICAS`` of each). A
task of a preemptible v2 job keeps its replicas at start and may be scaled between 1 and
``DI_MAX_REPLICAS``.
"""

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from flexjob.api.base import ApiModel
from flexjob.api.bounds import DI_MAX_REPLICAS
from flexjob.api.defaults import default_replica_spec
from flexjob.api.enums import CleanPodPolicy, ReplicaType
from flexjob.api.job import ElasticJob, ElasticJobSpec, NonNegative, ReplicaSpec, TaskSlice
from flexjob.api.meta import ObjectMeta
from flexjob.api.pod import PodTemplateSpec
from flexjob.api.problems import Problem, SpecError
from flexjob.api.readers.common import Converted, ForeignObject, Reader, native_job, parse

GROUP = "diengine.opendilab.org"
V1_VERSIONS = (f"{GROUP}/v1alpha1", f"{GROUP}/v1alpha2")
V2_VERSIONS = (f"{GROUP}/v2alpha1",)
KIND_AGGREGATOR_CONFIG = "AggregatorConfig"


def _di_clean_pod_policy(value: object) -> object:
    """DI Orchestrator v1 writes ``ALL`` (its webhook takes ``None``, ``ALL``, ``Running``),
    v2 ``All``: both are ``CleanPodPolicy.ALL``."""
    return CleanPodPolicy.ALL.value if value == "ALL" else value


DiCleanPodPolicy = Annotated[CleanPodPolicy, BeforeValidator(_di_clean_pod_policy)]


class TaskType(StrEnum):
    LEARNER = "learner"
    COLLECTOR = "collector"
    EVALUATOR = "evaluator"
    NONE = "none"


TASK_TO_REPLICA: dict[TaskType, ReplicaType] = {
    TaskType.LEARNER: ReplicaType.LEARNER,
    TaskType.COLLECTOR: ReplicaType.COLLECTOR,
    TaskType.EVALUATOR: ReplicaType.EVALUATOR,
    TaskType.NONE: ReplicaType.WORKER,
}


class Task(ApiModel):
    replicas: int | None = Field(default=None, ge=1)
    type: TaskType
    name: str | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class DIJobV2Spec(ApiModel):
    priority: Literal["normal", "high"] | None = None
    clean_pod_policy: DiCleanPodPolicy | None = None
    preemptible: bool | None = None
    backoff_limit: NonNegative | None = None
    volumes: list[dict[str, Any]] = Field(default_factory=list)
    tasks: list[Task]


def convert_v2(raw: dict[str, Any], companions: list[dict[str, Any]]) -> Converted:
    job = parse(ForeignObject[DIJobV2Spec], raw)
    by_type: dict[ReplicaType, list[tuple[int, Task]]] = {}
    for i, task in enumerate(job.spec.tasks):
        by_type.setdefault(TASK_TO_REPLICA[task.type], []).append((i, task))
    replica_specs: dict[ReplicaType, ReplicaSpec] = {}
    paths: dict[str, str] = {}
    problems = []
    for rtype, tasks in by_type.items():
        path = f"spec.replicaSpecs.{rtype}"
        paths[path] = f"spec.tasks[{tasks[0][0]}]"
        if len(tasks) == 1:
            task = tasks[0][1]
            replica_specs[rtype] = ReplicaSpec(
                replicas=task.replicas,
                name=task.name,
                template=task.template,
                **_preemptible_bounds(job.spec.preemptible, task.replicas),
            )
            continue
        slices = []
        for k, (i, task) in enumerate(tasks):
            paths[f"{path}.tasks[{k}]"] = f"spec.tasks[{i}]"
            if task.name is None:
                message = f"several {str(task.type)!r} tasks: each needs a name (its replicas')"
                problems.append(Problem(f"spec.tasks[{i}].name", None, message))
                continue
            slices.append(
                TaskSlice(name=task.name, replicas=task.replicas or 1, template=task.template)
            )
        total = sum(s.replicas for s in slices)
        replica_specs[rtype] = ReplicaSpec(
            replicas=total,
            template=tasks[0][1].template,
            tasks=slices,
            **_preemptible_bounds(job.spec.preemptible, total),
        )
    if problems:
        raise SpecError(problems)
    # The job-level fields of a v2 DIJob are ElasticJobSpec's own.
    shared = job.spec.model_dump(exclude={"tasks"})
    spec = ElasticJobSpec(replica_specs=replica_specs, **shared)
    return native_job(job.metadata, spec, paths)


def _preemptible_bounds(preemptible: bool | None, replicas: int | None) -> dict[str, int]:
    """A preemptible DIJob v2 task scales between 1 and ``DI_MAX_REPLICAS`` (its count the
    start); a task of a job that is not preemptible keeps its count."""
    if not preemptible:
        return {}
    return {"min_replicas": 1, "max_replicas": max(DI_MAX_REPLICAS, replicas or 1)}


class RoleSpec(ApiModel):
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class DIJobV1Spec(ApiModel):
    group: str | None = None
    priority_class_name: str | None = None
    clean_pod_policy: DiCleanPodPolicy | None = None
    volumes: list[dict[str, Any]] = Field(default_factory=list)
    coordinator: RoleSpec
    collector: RoleSpec | None = None
    learner: RoleSpec | None = None


class AggregatorConfigSpec(ApiModel):
    aggregator: RoleSpec


class AggregatorConfig(ApiModel):
    api_version: Literal["diengine.opendilab.org/v1alpha1", "diengine.opendilab.org/v1alpha2"]
    kind: Literal["AggregatorConfig"]
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AggregatorConfigSpec


def aggregator_config(raw: dict[str, Any]) -> AggregatorConfig:
    """A DI ``AggregatorConfig`` document, checked (``SpecError`` naming the bad fields)."""
    return parse(AggregatorConfig, raw, base=KIND_AGGREGATOR_CONFIG)


def convert_v1(raw: dict[str, Any], companions: list[dict[str, Any]]) -> Converted:
    job = parse(ForeignObject[DIJobV1Spec], raw)
    roles = {
        ReplicaType.COORDINATOR: job.spec.coordinator,
        ReplicaType.COLLECTOR: job.spec.collector,
        ReplicaType.LEARNER: job.spec.learner,
    }
    aggregators = [c for c in companions if c.get("kind") == KIND_AGGREGATOR_CONFIG]
    kept_config = None
    specs = {
        t: ReplicaSpec(replicas=1, template=r.template)
        if t is ReplicaType.COORDINATOR
        else on_request_spec(r)
        for t, r in roles.items()
        if r
    }
    if aggregators:
        config = aggregator_config(aggregators[0])
        kept_config = config.model_dump(
            mode="json", by_alias=True, exclude_none=True, include={"metadata", "spec"}
        )
        kept_config["metadata"] = config.metadata.to_wire()
        specs[ReplicaType.AGGREGATOR] = on_request_spec(config.spec.aggregator)
    # The job-level fields of a v1 DIJob are ElasticJobSpec's own.
    shared = job.spec.model_dump(exclude={"coordinator", "collector", "learner"})
    spec = ElasticJobSpec(replica_specs=specs, aggregator_config=kept_config, **shared)
    paths = {f"spec.replicaSpecs.{t}": f"spec.{t}" for t in roles}
    paths["spec.aggregatorConfig"] = KIND_AGGREGATOR_CONFIG
    paths[f"spec.replicaSpecs.{ReplicaType.AGGREGATOR}"] = (
        f"{KIND_AGGREGATOR_CONFIG}.spec.aggregator"
    )
    return native_job(job.metadata, spec, paths)


def on_request_spec(role: RoleSpec) -> ReplicaSpec:
    """The replica spec of a role created only as the coordinator asks: none at start."""
    return ReplicaSpec(
        replicas=0, min_replicas=0, max_replicas=DI_MAX_REPLICAS, template=role.template
    )


def aggregator_record_problems(job: ElasticJob) -> list[Problem]:
    """``spec.aggregatorConfig`` is a record: the AggregatorConfig a DIJob v1 was converted
    with; the aggregators run from ``spec.replicaSpecs.aggregator``, which the conversion fills
    from it. A record nothing acts on (no aggregator replica spec: one written by hand on an
    ElasticJob) or one that says other than what runs is a problem naming the field."""
    record = job.spec.aggregator_config
    if record is None:
        return []
    path = "spec.aggregatorConfig"
    runs = job.spec.replica_specs.get(ReplicaType.AGGREGATOR)
    if runs is None:
        message = (
            "nothing reads it on an ElasticJob (it records the AggregatorConfig a DIJob v1 was "
            "converted with): give the aggregators as spec.replicaSpecs.aggregator, or submit "
            "the DIJob v1 with its AggregatorConfig document; remove spec.aggregatorConfig"
        )
        return [Problem(path, record, message)]
    raw = {"apiVersion": V1_VERSIONS[0], "kind": KIND_AGGREGATOR_CONFIG, **record}
    try:
        config = aggregator_config(raw)
    except SpecError as exc:
        return [
            Problem(f"{path}{p.path.removeprefix(KIND_AGGREGATOR_CONFIG)}", p.value, p.message)
            for p in exc.problems
        ]
    said = default_replica_spec(on_request_spec(config.spec.aggregator)).template
    if said != default_replica_spec(runs).template:
        message = (
            "its spec.aggregator.template differs from spec.replicaSpecs.aggregator.template, "
            "which is what the aggregators run: remove spec.aggregatorConfig (a record of a "
            "converted DIJob v1) or make the two agree"
        )
        return [Problem(f"{path}.spec.aggregator.template", record, message)]
    return []


READERS = (
    Reader("DI Orchestrator v2 DIJob", "DIJob", V2_VERSIONS, convert_v2),
    Reader("DI Orchestrator v1 DIJob", "DIJob", V1_VERSIONS, convert_v1),
)
