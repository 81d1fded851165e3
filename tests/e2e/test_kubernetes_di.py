"""examples/di_cartpole as a DIJob v1 on the Kubernetes path: applied as a ``DIJob`` object,
run by the kopf operator as an ElasticJob (coordinator first), the coordinator asking
``flexjob server --platform kubernetes`` for a learner and collectors, every pod run by the
process kubelet (each role listening on its pod's address); the DIJob's own status ends
``Succeeded`` when the coordinator reaches its target. Target 60 as in the short local form
(``tests/e2e/test_di_cartpole.py``): about a minute."""

import contextlib
import re
from pathlib import Path

import pytest
import yaml
from kubernetes.client import CustomObjectsApi

from flexjob.api.foreign_kinds import DIJOB
from flexjob.api.names import ENV_SERVER_URL
from flexjob.platform.ports import free_port
from tests.e2e.k8s_cluster import cluster
from tests.e2e.test_di_cartpole import JOB, REACHED, TARGET, spec
from tests.support.k8s_emulator import wait_for
from tests.support.k8s_fixtures import in_thread
from tests.support.server_process import flexjob_server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(360)]
pytest.importorskip("gymnasium", reason="examples/di_cartpole runs gymnasium: [examples] extra")
COORDINATOR = f"{JOB}-coordinator-0"


async def test_di_cartpole_dijob_reaches_its_target_on_the_kubernetes_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = yaml.safe_load(spec(tmp_path, "dijob.yaml").read_text())
    for role in ("coordinator", "collector", "learner"):
        # In a pod a role listens on the pod's address (the kubelet gives 0.0.0.0 that
        # meaning), not on loopback as the example does on one machine.
        container = body["spec"][role]["template"]["spec"]["containers"][0]
        container.setdefault("env", []).append({"name": "DI_BIND", "value": "0.0.0.0"})
    port = free_port()
    monkeypatch.setenv(ENV_SERVER_URL, f"http://127.0.0.1:{port}")  # told to DI roles
    async with cluster(tmp_path / "cluster") as c:
        with contextlib.ExitStack() as stack:
            server = flexjob_server(tmp_path / "home", kubeconfig=c.kubelet.kubeconfig, port=port)
            await in_thread(stack.enter_context, server)
            api = CustomObjectsApi(c.operator.client)
            create = api.create_namespaced_custom_object
            await in_thread(create, DIJOB.group, "v1alpha1", "default", DIJOB.plural, body)
            dijobs = c.emulator.kind(DIJOB.group, "v1alpha1", DIJOB.plural)

            def phase() -> str:
                status = c.emulator.store.get(dijobs, "default", JOB).get("status") or {}
                return str(status.get("phase") or "")

            with contextlib.suppress(TimeoutError):  # the assertion below says what happened
                await wait_for(lambda: phase() in ("Succeeded", "Failed"), 240, 0.5)
            log = c.log(COORDINATOR)
            events = c.emulator.store.select(c.emulator.kind("", "v1", "events"), "default")
            context = (
                f"{log[-3000:]}\njob status: {c.job(JOB).get('status')}\nevents: "
                + "; ".join(f"{e.get('reason')}: {e.get('message')}" for e in events)
            )
            assert phase() == "Succeeded", context
            learner_log = c.log(f"{JOB}-learner-0")
    reached = REACHED.search(log)
    assert reached and float(reached.group(1)) >= TARGET, log[-2000:]
    assert learner_log, "the learner the coordinator asked the server for never ran"
    trace = re.search(r"collectors over time: (.*)", log)
    assert trace, log[-2000:]
    counts = [int(step.split(":")[1]) for step in trace.group(1).split()]
    assert counts and counts[0] >= 1, trace.group(0)
