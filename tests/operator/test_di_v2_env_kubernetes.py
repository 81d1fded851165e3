"""A DIJob v2 on the Kubernetes path (emulator, kopf operator): each pod carries DI
Orchestrator v2's variables, ``DI_NODES[DI_RANK]`` being the DNS name of the pod's own
Service (``<replica>.<namespace>.svc``, port 22270), which exists."""

from flexjob.api.foreign_kinds import DIJOB
from tests.operator.kopf_fixtures import OperatorHarness
from tests.operator.test_foreign_kinds import (
    DEADLINE,
    SPECS,
    cluster,  # noqa: F401 (the fixture)
    create,
    documents,
    pod,
    pods,
)
from tests.support.k8s_emulator import wait_for


async def test_each_pod_of_a_dijob_v2_gets_its_rank_and_every_replicas_service_host(
    cluster: OperatorHarness,  # noqa: F811
) -> None:
    [body] = documents(SPECS / "dijob-v2.yaml")  # learner 1, collector 2, evaluator 1
    name = body["metadata"]["name"]
    await create(cluster, DIJOB, body)
    wanted = sum(t["replicas"] for t in body["spec"]["tasks"])
    names = await wait_for(
        lambda: len(pods(cluster, name)) == wanted and pods(cluster, name), DEADLINE, 0.1
    )
    envs = {
        n: {e["name"]: e.get("value") for e in pod(cluster, n)["spec"]["containers"][0]["env"]}
        for n in names
    }
    assert sorted(int(e["DI_RANK"]) for e in envs.values()) == list(range(wanted))
    [nodes] = {e["DI_NODES"] for e in envs.values()}
    for pod_name, env in envs.items():
        assert nodes.split(",")[int(env["DI_RANK"])] == f"{pod_name}.default.svc"
        assert env["DI_JOB_ID"] == f"default/{name}"
    kind = cluster.emulator.kind("", "v1", "services")
    services = {
        s["metadata"]["name"]: s["spec"]["ports"][0]["port"]
        for s in cluster.emulator.store.select(kind, "default")
    }
    assert {n: services.get(n) for n in names} == {n: 22270 for n in names}
    collectors = envs[f"{name}-collector-0"]["DI_COLLECTOR_NODES"].split(",")
    assert collectors == [f"{name}-collector-{i}.default.svc" for i in range(2)]
