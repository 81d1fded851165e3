"""The kopf operator end to end on the emulator: the test plays kubelet and user.

create ElasticJob → master pod + service → pod phases (patched here) → job phases →
ScalePlan adds a worker → delete releases the finalizer and removes the pods.
"""

from typing import Any

from flexjob.api import JobPhase
from flexjob.api.names import LABEL_JOB_NAME
from tests.operator.kopf_fixtures import OperatorHarness
from tests.support.k8s_emulator import wait_for
from tests.support.pod_status import pod_status

MERGE = "application/merge-patch+json"
DEADLINE = 15.0


def job_body(name: str = "mnist", workers: int = 1) -> dict[str, Any]:
    template = {
        "spec": {
            "containers": [
                {"name": "main", "image": "python:3.11", "command": ["python", "train.py"]}
            ]
        }
    }
    return {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ElasticJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicaSpecs": {
                "master": {"replicas": 1, "template": template},
                "worker": {
                    "replicas": workers,
                    "minReplicas": 1,
                    "maxReplicas": 4,
                    "template": template,
                },
            }
        },
    }


async def create_job(op: OperatorHarness, body: dict[str, Any]) -> None:
    await op.custom("create_namespaced_custom_object", "default", "elasticjobs", body)


async def pod_names(op: OperatorHarness, job: str = "mnist") -> list[str]:
    pods = await op.core("list_namespaced_pod", "default", label_selector=f"{LABEL_JOB_NAME}={job}")
    return sorted(p.metadata.name for p in pods.items)


async def job_phase(op: OperatorHarness, job: str = "mnist") -> str | None:
    body = await op.custom("get_namespaced_custom_object", "default", "elasticjobs", job)
    return (body.get("status") or {}).get("phase")  # type: ignore[no-any-return]


async def set_pod_phase(
    op: OperatorHarness, name: str, phase: str, exit_code: int | None = None
) -> None:
    """Act as the kubelet: report the pod's phase and, when it ended, its exit code."""
    status = pod_status(phase, exit_code)
    await op.core(
        "patch_namespaced_pod_status", name, "default", {"status": status}, _content_type=MERGE
    )


async def test_new_job_gets_its_master_pod_and_service(operator: OperatorHarness) -> None:
    await create_job(operator, job_body())

    async def master_up() -> bool:
        services = await operator.core("list_namespaced_service", "default")
        return "mnist-master-0" in await pod_names(operator) and any(
            s.metadata.name == "mnist-master-0" for s in services.items
        )

    await wait_for(master_up, DEADLINE)
    pod = await operator.core("read_namespaced_pod", "mnist-master-0", "default")
    assert pod.metadata.owner_references[0].kind == "ElasticJob"


async def test_new_job_gets_the_flexjob_finalizer(operator: OperatorHarness) -> None:
    await create_job(operator, job_body())

    async def finalized() -> bool:
        body = await operator.custom(
            "get_namespaced_custom_object", "default", "elasticjobs", "mnist"
        )
        return "flexjob.dev/finalizer" in (body["metadata"].get("finalizers") or [])

    await wait_for(finalized, DEADLINE)


async def test_job_phase_follows_its_pods(operator: OperatorHarness) -> None:
    await create_job(operator, job_body())
    wanted = ["mnist-master-0", "mnist-worker-0"]

    async def all_created() -> bool:
        return await pod_names(operator) == wanted

    await wait_for(all_created, DEADLINE)
    for name in wanted:
        await set_pod_phase(operator, name, "Running")
    await wait_for(lambda: _phase_is(operator, JobPhase.RUNNING), DEADLINE)
    await set_pod_phase(operator, "mnist-master-0", "Succeeded", exit_code=0)
    await wait_for(lambda: _phase_is(operator, JobPhase.SUCCEEDED), DEADLINE)


async def _phase_is(op: OperatorHarness, phase: JobPhase) -> bool:
    return await job_phase(op) == phase.value


async def test_scale_plan_adds_a_worker(operator: OperatorHarness) -> None:
    await create_job(operator, job_body(workers=1))

    async def has(count: int) -> bool:
        names = await pod_names(operator)
        return len([n for n in names if "-worker-" in n]) == count

    await wait_for(lambda: has(1), DEADLINE)
    plan = {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ScalePlan",
        "metadata": {"name": "mnist-grow", "namespace": "default"},
        "spec": {"ownerJob": "mnist", "replicaResourceSpecs": {"worker": {"replicas": 2}}},
    }
    await operator.custom("create_namespaced_custom_object", "default", "scaleplans", plan)
    await wait_for(lambda: has(2), DEADLINE)

    async def plan_done() -> bool:
        body = await operator.custom(
            "get_namespaced_custom_object", "default", "scaleplans", "mnist-grow"
        )
        return (body.get("status") or {}).get("phase") == "Succeeded"

    await wait_for(plan_done, DEADLINE)


async def test_deleting_a_job_removes_its_pods_and_releases_it(operator: OperatorHarness) -> None:
    await create_job(operator, job_body())

    async def pods_created() -> bool:
        return len(await pod_names(operator)) == 2

    await wait_for(pods_created, DEADLINE)
    await operator.custom("delete_namespaced_custom_object", "default", "elasticjobs", "mnist")

    async def gone() -> bool:
        jobs = await operator.custom("list_namespaced_custom_object", "default", "elasticjobs")
        return not jobs["items"] and not await pod_names(operator)

    await wait_for(gone, DEADLINE)


async def test_a_job_without_master_gets_a_torch_world_on_kubernetes(
    operator: OperatorHarness,
) -> None:
    """A chief and a worker running plain torch (no master): the chief's pod gets a service on
    Kubeflow's port and every pod MASTER_ADDR (that service's name), MASTER_PORT, WORLD_SIZE and
    RANK (``core.operator.torch_world``)."""
    body = job_body("plain", workers=1)
    specs = body["spec"]["replicaSpecs"]
    specs["chief"] = specs.pop("master")
    await create_job(operator, body)

    async def both_up() -> bool:
        return await pod_names(operator, "plain") == ["plain-chief-0", "plain-worker-0"]

    await wait_for(both_up, DEADLINE)
    services = await operator.core("list_namespaced_service", "default")
    ours = {s.metadata.name: s for s in services.items if s.metadata.name.startswith("plain-")}
    assert sorted(ours) == ["plain-chief-0"]
    assert [p.port for p in ours["plain-chief-0"].spec.ports] == [23456]
    for name, rank in (("plain-chief-0", "0"), ("plain-worker-0", "1")):
        pod = await operator.core("read_namespaced_pod", name, "default")
        env = {e.name: e.value for e in pod.spec.containers[0].env}
        assert env["MASTER_ADDR"] == "plain-chief-0.default.svc", env
        assert (env["MASTER_PORT"], env["WORLD_SIZE"], env["RANK"]) == ("23456", "2", rank)
        assert "FLEXJOB_MASTER" not in env


async def test_a_job_needing_flexjobs_master_fails_naming_it_without_flexjob_image(
    operator: OperatorHarness,
) -> None:
    """This operator has no FLEXJOB_IMAGE, so it runs no job master: a job with
    ``rdzvBackend: flexjob`` fails at once with a condition naming the field and the fix,
    and no pod starts (before, its workers started and failed with "--master is required")."""
    body = job_body("needs-master")
    del body["spec"]["replicaSpecs"]["master"]
    body["spec"]["elasticPolicy"] = {"rdzvBackend": "flexjob"}
    await create_job(operator, body)

    async def failed() -> bool:
        return await job_phase(operator, "needs-master") == JobPhase.FAILED.value

    await wait_for(failed, DEADLINE)
    stored = await operator.custom(
        "get_namespaced_custom_object", "default", "elasticjobs", "needs-master"
    )
    condition = stored["status"]["conditions"][-1]
    assert condition["reason"] == "NoJobMaster"
    assert "spec.elasticPolicy.rdzvBackend: flexjob" in condition["message"]
    assert "set FLEXJOB_IMAGE" in condition["message"]
    assert await pod_names(operator, "needs-master") == []
