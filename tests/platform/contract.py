"""The Platform contract: behaviour every ``flexjob.platform`` implementation must show.

Reusable: a test module for one implementation does ``from tests.platform.contract import *``
and defines three fixtures:

* ``platform`` — the ``Platform`` under test, empty;
* ``finish_replica`` — ``(platform, replica, exit_code) -> None``: make a running replica exit
  with that code (locally: let its process exit; on an emulator: set the pod status);
* ``contract_env`` — extra env for contract replicas (the local one names where
  ``finish_replica`` drops exit files), ``{}`` elsewhere.

Contract replicas run ``WAIT_FOR_EXIT``: a Python one-liner that waits for the file
``$CONTRACT_EXIT_DIR/<replica name>`` and exits with the code written in it.
"""

import sys
from collections.abc import Callable

import pytest

from flexjob.api import (
    ElasticJob,
    ElasticJobSpec,
    JobPhase,
    ObjectMeta,
    ReplicaPhase,
    ReplicaSpec,
    ReplicaType,
    ScalePlan,
    ScalePlanPhase,
    ScalePlanSpec,
    ScalePlanStatus,
    names,
)
from flexjob.api.pod import Container, PodSpec, PodTemplateSpec
from flexjob.core.operator.actions import EventType
from flexjob.core.operator.replica_plan import render_replica, service_request
from flexjob.platform.contract import (
    AlreadyExistsError,
    InvalidStatusPatchError,
    NotFoundError,
    Platform,
    Replica,
    ReplicaRequest,
    WatchEventType,
)
from tests.support.polling import wait_until

FinishReplica = Callable[[Platform, Replica, int], None]
NS = "default"

WAIT_FOR_EXIT = (
    "import os, pathlib, sys, time\n"
    "d = pathlib.Path(os.environ.get('CONTRACT_EXIT_DIR', '/nonexistent'))\n"
    "p = d / '-'.join(os.environ[k] for k in "
    "('FLEXJOB_JOB_NAME', 'FLEXJOB_REPLICA_TYPE', 'FLEXJOB_REPLICA_INDEX'))\n"
    "while not p.exists(): time.sleep(0.05)\n"
    "sys.exit(int(p.read_text()))\n"
)


def contract_job(name: str = "cj", env: dict[str, str] | None = None) -> ElasticJob:
    container = Container(name="main", image="python:3.11", command=[sys.executable, "-c"])
    container.args = [WAIT_FOR_EXIT]
    template = PodTemplateSpec(spec=PodSpec(containers=[container]))
    return ElasticJob(
        metadata=ObjectMeta(name=name, namespace=NS),
        spec=ElasticJobSpec(
            replica_specs={ReplicaType.WORKER: ReplicaSpec(replicas=2, template=template)},
            envs=env or {},
        ),
    )


def given_job(
    platform: Platform, name: str = "cj", env: dict[str, str] | None = None
) -> ElasticJob:
    """A stored contract job (replicas are created for stored jobs only, as reconcile does)."""
    return platform.create_job(contract_job(name, env))


def worker_request(job: ElasticJob, index: int = 0) -> ReplicaRequest:
    return render_replica(
        job, ReplicaType.WORKER, index, master_address=None, own_address=None, node=None
    )


def replica_named(platform: Platform, name: str, job: str = "cj") -> Replica | None:
    return next((r for r in platform.list_replicas(NS, job) if r.name == name), None)


# --- the job store ---------------------------------------------------------------------------
def test_created_job_reads_back_with_a_pending_status(platform: Platform) -> None:
    platform.create_job(contract_job())
    job = platform.get_job(NS, "cj")
    assert job.spec.replica_specs[ReplicaType.WORKER].replicas == 2
    assert job.status is not None
    assert job.status.phase is JobPhase.PENDING
    assert job.metadata.uid


def test_creating_a_job_twice_is_refused(platform: Platform) -> None:
    platform.create_job(contract_job())
    with pytest.raises(AlreadyExistsError):
        platform.create_job(contract_job())


def test_getting_a_missing_job_raises_not_found(platform: Platform) -> None:
    with pytest.raises(NotFoundError):
        platform.get_job(NS, "nope")


def test_jobs_are_listed_oldest_first_per_namespace(platform: Platform) -> None:
    for name in ("b", "a"):
        platform.create_job(contract_job(name))
    other = contract_job("c")
    other.metadata.namespace = "elsewhere"
    platform.create_job(other)
    assert [j.name for j in platform.list_jobs(NS)] == ["b", "a"]
    assert {j.name for j in platform.list_jobs()} >= {"a", "b", "c"}


def test_patched_status_is_kept_and_the_spec_is_not_touched(platform: Platform) -> None:
    platform.create_job(contract_job())
    platform.patch_job_status(NS, "cj", {"phase": "Running", "restartCount": 2})
    job = platform.get_job(NS, "cj")
    assert job.status is not None
    assert (job.status.phase, job.status.restart_count) == (JobPhase.RUNNING, 2)
    assert job.spec.replica_specs[ReplicaType.WORKER].replicas == 2


def test_status_patch_leaves_fields_it_does_not_name_untouched(platform: Platform) -> None:
    platform.create_job(contract_job())
    platform.patch_job_status(NS, "cj", {"phase": "Running", "replicas": {"worker": 3}})
    job = platform.patch_job_status(NS, "cj", {"restartCount": 1})
    assert job.status == platform.get_job(NS, "cj").status
    assert job.status is not None
    assert (job.status.phase, job.status.replicas, job.status.restart_count) == (
        JobPhase.RUNNING,
        {ReplicaType.WORKER: 3},
        1,
    )


def test_two_writers_patching_different_fields_both_survive(platform: Platform) -> None:
    platform.create_job(contract_job())
    before = platform.get_job(NS, "cj")  # both writers read the same state ...
    assert before.status is not None and before.status.replicas == {}
    platform.patch_job_status(NS, "cj", {"replicas": {"worker": 4}})  # ... the server scales
    platform.patch_job_status(NS, "cj", {"allocation": {"worker": ["n1"]}, "message": "placed"})
    status = platform.get_job(NS, "cj").status
    assert status is not None
    assert status.replicas == {ReplicaType.WORKER: 4}
    assert status.allocation == {ReplicaType.WORKER: ["n1"]}
    assert status.message == "placed"


def test_replica_counts_merge_per_type_and_null_removes_a_type(platform: Platform) -> None:
    platform.create_job(contract_job())
    platform.patch_job_status(NS, "cj", {"replicas": {"worker": 2, "evaluator": 1}})
    platform.patch_job_status(NS, "cj", {"replicas": {"worker": 5}})
    platform.patch_job_status(NS, "cj", {"replicas": {"evaluator": None}})
    status = platform.get_job(NS, "cj").status
    assert status is not None and status.replicas == {ReplicaType.WORKER: 5}


def test_profilings_patches_merge_recursively(platform: Platform) -> None:
    platform.create_job(contract_job())
    platform.patch_job_status(NS, "cj", {"profilings": {"2": {"speed": 1.5, "mem": 10}}})
    platform.patch_job_status(NS, "cj", {"profilings": {"2": {"mem": 12}, "4": {"speed": 2.8}}})
    platform.patch_job_status(NS, "cj", {"profilings": {"4": None}})
    status = platform.get_job(NS, "cj").status
    assert status is not None and status.profilings == {"2": {"speed": 1.5, "mem": 12}}


def test_status_patch_with_an_unknown_field_is_refused_and_writes_nothing(
    platform: Platform,
) -> None:
    platform.create_job(contract_job())
    with pytest.raises(InvalidStatusPatchError, match=r"bogus.*allowed: allocation"):
        platform.patch_job_status(NS, "cj", {"phase": "Running", "bogus": 1})
    status = platform.get_job(NS, "cj").status
    assert status is not None and status.phase is JobPhase.PENDING


def test_status_patch_of_a_missing_job_raises_not_found(platform: Platform) -> None:
    with pytest.raises(NotFoundError):
        platform.patch_job_status(NS, "nope", {"phase": "Running"})


def test_deleted_job_is_gone_and_deleting_again_is_harmless(platform: Platform) -> None:
    platform.create_job(contract_job())
    platform.delete_job(NS, "cj")
    platform.delete_job(NS, "cj")
    with pytest.raises(NotFoundError):
        platform.get_job(NS, "cj")


def test_scale_plans_are_listed_per_job_and_their_status_patched(platform: Platform) -> None:
    platform.create_job(contract_job())
    for name, owner in (("p1", "cj"), ("p2", "other")):
        platform.create_scale_plan(
            ScalePlan(
                metadata=ObjectMeta(name=name, namespace=NS), spec=ScalePlanSpec(owner_job=owner)
            )
        )
    plans = platform.list_scale_plans(NS, "cj")
    assert [p.metadata.name for p in plans] == ["p1"]
    assert plans[0].status is not None and plans[0].status.phase is ScalePlanPhase.PENDING
    platform.patch_scale_plan_status(NS, "p1", ScalePlanStatus(phase=ScalePlanPhase.SUCCEEDED))
    status = platform.list_scale_plans(NS, "cj")[0].status
    assert status is not None and status.phase is ScalePlanPhase.SUCCEEDED


def test_events_are_listed_oldest_first(platform: Platform) -> None:
    platform.create_job(contract_job())
    platform.record_event(NS, "cj", "First", "one", EventType.NORMAL)
    platform.record_event(NS, "cj", "Second", "two", EventType.WARNING)
    events = platform.list_events(NS, "cj")
    assert [(e.reason, e.type) for e in events][-2:] == [
        ("First", EventType.NORMAL),
        ("Second", EventType.WARNING),
    ]


def test_watching_jobs_reports_existing_jobs_then_changes(platform: Platform) -> None:
    platform.create_job(contract_job())
    seen = []
    for event in platform.watch_jobs(NS, timeout=5):
        seen.append((event.type, event.object.status.phase if event.object.status else None))
        if event.type is WatchEventType.ADDED:
            platform.patch_job_status(NS, "cj", {"phase": JobPhase.STARTING})
        if event.type is WatchEventType.MODIFIED:
            break
    assert seen == [
        (WatchEventType.ADDED, JobPhase.PENDING),
        (WatchEventType.MODIFIED, JobPhase.STARTING),
    ]


# --- replicas and services -------------------------------------------------------------------
def test_created_replica_is_listed_with_its_labels(
    platform: Platform, contract_env: dict[str, str]
) -> None:
    job = given_job(platform, env=contract_env)
    created = platform.create_replica(worker_request(job, 1))
    assert created.phase in (ReplicaPhase.PENDING, ReplicaPhase.RUNNING)
    (listed,) = platform.list_replicas(NS, "cj")
    assert (listed.name, listed.type, listed.index) == ("cj-worker-1", ReplicaType.WORKER, 1)
    assert listed.labels[names.LABEL_JOB_NAME] == "cj"
    assert listed.uid


def test_creating_a_replica_twice_is_refused(
    platform: Platform, contract_env: dict[str, str]
) -> None:
    job = given_job(platform, env=contract_env)
    platform.create_replica(worker_request(job))
    with pytest.raises(AlreadyExistsError):
        platform.create_replica(worker_request(job))


@pytest.mark.parametrize(("code", "phase"), [(0, ReplicaPhase.SUCCEEDED), (3, ReplicaPhase.FAILED)])
def test_exited_replica_reports_its_phase_and_exit_code(
    platform: Platform,
    contract_env: dict[str, str],
    finish_replica: FinishReplica,
    code: int,
    phase: ReplicaPhase,
) -> None:
    replica = platform.create_replica(worker_request(given_job(platform, env=contract_env)))
    finish_replica(platform, replica, code)
    done = wait_until(
        lambda: (r := replica_named(platform, replica.name)) and r.phase is phase and r,
        what=f"{replica.name} {phase}",
    )
    assert done.exit_code == code


def test_deleted_replica_disappears(platform: Platform, contract_env: dict[str, str]) -> None:
    replica = platform.create_replica(worker_request(given_job(platform, env=contract_env)))
    platform.delete_replica(NS, replica.name)
    wait_until(lambda: replica_named(platform, replica.name) is None, what="replica gone")
    platform.delete_replica(NS, replica.name)


def test_replicas_are_listed_by_job(platform: Platform, contract_env: dict[str, str]) -> None:
    platform.create_replica(worker_request(given_job(platform, "cj", contract_env)))
    platform.create_replica(worker_request(given_job(platform, "other", contract_env)))
    assert [r.job for r in platform.list_replicas(NS, "cj")] == ["cj"]
    assert {r.job for r in platform.list_replicas(NS)} == {"cj", "other"}


def test_watching_replicas_reports_a_created_replica(
    platform: Platform, contract_env: dict[str, str]
) -> None:
    platform.create_replica(worker_request(given_job(platform, env=contract_env)))
    event = next(iter(platform.watch_replicas(NS, "cj", timeout=5)))
    assert (event.type, event.object.name) == (WatchEventType.ADDED, "cj-worker-0")


def test_service_gives_a_replica_an_address(platform: Platform) -> None:
    job = given_job(platform)
    service = platform.create_service(service_request(job, ReplicaType.WORKER, 0, 2222))
    host, port = service.address.rsplit(":", 1)
    assert host and int(port) > 0
    assert [s.name for s in platform.list_services(NS, "cj")] == ["cj-worker-0"]
    platform.delete_service(NS, service.name)
    assert platform.list_services(NS, "cj") == []


def test_creating_a_service_twice_is_refused(platform: Platform) -> None:
    request = service_request(given_job(platform), ReplicaType.WORKER, 0, 2222)
    platform.create_service(request)
    with pytest.raises(AlreadyExistsError):
        platform.create_service(request)
