"""``to_wire`` is compact and lossless: loading its output gives an equal model."""

from hypothesis import given, settings
from hypothesis import strategies as st

from flexjob.api import (
    CleanPodPolicy,
    Container,
    ElasticJob,
    ElasticJobSpec,
    JobPriority,
    ObjectMeta,
    PodSpec,
    PodTemplateSpec,
    ReplicaSpec,
    ReplicaType,
    RestartPolicy,
    ScalePlan,
)
from flexjob.api.defaults import apply_defaults

counts = st.none() | st.integers(0, 16)
names = st.from_regex(r"[a-z][a-z0-9-]{0,10}[a-z0-9]", fullmatch=True)
empty_or = st.one_of(st.just({}), st.dictionaries(names, st.text(max_size=5), max_size=2))

containers = st.builds(
    Container,
    name=names,
    image=st.none() | names,
    command=st.lists(st.text(max_size=8), max_size=2),
    working_dir=st.none() | st.just("/work"),
)
templates = st.builds(
    PodTemplateSpec,
    metadata=st.one_of(st.just({}), st.just({"labels": {}})),
    spec=st.builds(PodSpec, containers=st.lists(containers, max_size=2), node_selector=empty_or),
)
replica_specs = st.builds(
    ReplicaSpec,
    replicas=counts,
    min_replicas=counts,
    max_replicas=counts,
    restart_policy=st.none() | st.sampled_from(RestartPolicy),
    priority=st.none() | st.sampled_from(JobPriority),
    template=templates,
    restart_exit_codes=st.none() | st.lists(st.integers(0, 255), max_size=2),
)
jobs = st.builds(
    ElasticJob,
    metadata=st.builds(ObjectMeta, name=names, labels=empty_or),
    spec=st.builds(
        ElasticJobSpec,
        replica_specs=st.dictionaries(st.sampled_from(ReplicaType), replica_specs, max_size=3),
        clean_pod_policy=st.none() | st.sampled_from(CleanPodPolicy),
        backoff_limit=counts,
        envs=empty_or,
        job_args=empty_or,
        volumes=st.lists(st.just({"name": "v", "emptyDir": {}}), max_size=1),
    ),
)


@settings(max_examples=40, deadline=None)
@given(jobs)
def test_to_wire_round_trips(job: ElasticJob) -> None:
    assert ElasticJob.model_validate(job.to_wire()) == job


@settings(max_examples=20, deadline=None)
@given(jobs)
def test_defaulted_job_round_trips(job: ElasticJob) -> None:
    defaulted = apply_defaults(job)
    assert ElasticJob.model_validate(defaulted.to_wire()) == defaulted


def test_to_wire_of_a_bare_job_has_no_empty_fields() -> None:
    wire = ElasticJob(metadata=ObjectMeta(name="a")).to_wire()
    assert wire == {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ElasticJob",
        "metadata": {"name": "a", "namespace": "default"},
    }


def test_to_wire_keeps_empty_objects_the_user_wrote_inside_open_objects() -> None:
    job = ElasticJob.model_validate(
        {"metadata": {"name": "a"}, "spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}
    )
    assert job.to_wire()["spec"]["volumes"] == [{"name": "v", "emptyDir": {}}]


def test_scale_plan_to_wire_round_trips() -> None:
    plan = ScalePlan.model_validate(
        {"metadata": {"name": "p"}, "spec": {"ownerJob": "j", "createPods": [{"name": "w-0"}]}}
    )
    assert ScalePlan.model_validate(plan.to_wire()) == plan
    assert "removePods" not in plan.to_wire()["spec"]
