"""The local reconcile loop driving real processes through the local platform."""

from pathlib import Path

from flexjob.api import (
    JobPhase,
    ObjectMeta,
    ReplicaResourceSpec,
    ReplicaType,
    ScalePlan,
    ScalePlanPhase,
    ScalePlanSpec,
)
from flexjob.operator.local.loop import LocalJobLoop
from flexjob.platform.local import LocalPlatform
from flexjob.platform.local.job_store import LocalJobStore
from tests.support.local_jobs import (
    fail_first_then_succeed,
    local_job,
    local_platform,  # noqa: F401 (the fixture)
    wait_for_file_then_exit,
)
from tests.support.polling import wait_until


def run(platform: LocalPlatform, name: str) -> JobPhase:
    job = LocalJobLoop(platform, "default", name, interval=0.05).run()
    assert job is not None and job.status is not None
    return job.status.phase


def test_job_whose_master_exits_zero_succeeds(platform: LocalPlatform) -> None:
    platform.create_job(local_job("ok", master="print('m')", worker="import time; time.sleep(30)"))
    assert run(platform, "ok") is JobPhase.SUCCEEDED
    assert {r.name for r in platform.list_replicas("default", "ok")} == {"ok-master-0"}


def test_failing_worker_is_restarted_until_it_succeeds(
    platform: LocalPlatform, tmp_path: Path
) -> None:
    done = tmp_path / "done"
    worker = fail_first_then_succeed(tmp_path / "count", 2, done)
    platform.create_job(
        local_job("r", master=wait_for_file_then_exit(done), worker=worker, workers=1)
    )
    assert run(platform, "r") is JobPhase.SUCCEEDED
    job = platform.get_job("default", "r")
    assert job.status is not None and job.status.restart_count == 2


def test_scale_plan_adds_a_worker_to_a_running_job(platform: LocalPlatform, tmp_path: Path) -> None:
    stop = tmp_path / "stop"
    platform.create_job(
        local_job("s", master=wait_for_file_then_exit(stop), worker=wait_for_file_then_exit(stop))
    )
    loop = LocalJobLoop(platform, "default", "s", interval=0.05)
    wait_until(lambda: loop.step().job.status.phase is JobPhase.RUNNING)  # type: ignore[union-attr]
    platform.create_scale_plan(
        ScalePlan(
            metadata=ObjectMeta(name="grow"),
            spec=ScalePlanSpec(
                owner_job="s",
                replica_resource_specs={ReplicaType.WORKER: ReplicaResourceSpec(replicas=3)},
            ),
        )
    )
    wait_until(lambda: len(loop.step().replicas) == 4, what="a third worker")
    plan = platform.list_scale_plans("default", "s")[0]
    assert plan.status is not None and plan.status.phase is ScalePlanPhase.SUCCEEDED
    stop.touch()
    assert loop.run() is not None


def test_deleted_job_stops_the_loop_and_its_replicas(platform: LocalPlatform) -> None:
    platform.create_job(local_job("d", master=None, worker="import time; time.sleep(30)"))
    loop = LocalJobLoop(platform, "default", "d", interval=0.05)
    wait_until(lambda: loop.step().job.status.phase is JobPhase.RUNNING)  # type: ignore[union-attr]
    LocalJobStore(platform.db).delete_job("default", "d")  # the row only, as another process
    assert loop.step().done
    assert platform.list_replicas("default", "d") == []
