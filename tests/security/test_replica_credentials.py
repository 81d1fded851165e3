"""Replicas made by an operator hold their own node's credential, not the job's token: on the
Kubernetes emulator each worker pod's env carries ``FLEXJOB_NODE_CREDENTIAL`` for its own node
(``worker-<i>``) and no token; the master's pod alone reads the token from the job's Secret.
Locally a submitted job's worker finds its credential and no token in its environment, and a
call it forges as another node is refused (PERMISSION_DENIED) with the job's books unchanged."""

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from kubernetes.client import ApiClient, CoreV1Api, V1Pod

from flexjob.api import ElasticPolicy, names
from flexjob.core.operator.job_master import kubernetes_job_master
from flexjob.operator.reconcile_pass import reconcile_job
from flexjob.platform.kubernetes import KubernetesPlatform
from flexjob.platform.local import LocalPlatform
from flexjob.rpc.auth import master_token, node_credential
from flexjob.rpc.client import MasterClient
from tests.support.k8s_fixtures import EmulatorThread, client_configuration
from tests.support.local_jobs import local_job, submit_detached, wait_for_file_then_exit
from tests.support.polling import wait_until

OPTIONS = kubernetes_job_master("flexjob:1")
TOKEN_VARS = (names.ENV_MASTER_TOKEN, names.ENV_MASTER_TOKEN_FILE)


def _emulated_pods() -> tuple[str, dict[str, V1Pod]]:
    """The job's token and its pods, once the operator made them on the emulator."""
    with EmulatorThread() as emulator:
        platform = KubernetesPlatform.from_config(server=emulator.base_url)
        try:
            core = CoreV1Api(ApiClient(client_configuration(emulator)))
            job = local_job("cred", None, "pass", workers=2)
            job.spec.elastic_policy = ElasticPolicy(rdzv_backend="flexjob")
            platform.create_job(job)
            for _ in range(4):
                reconcile_job(platform, "default", "cred", datetime.now(UTC), job_master=OPTIONS)
            secret = core.read_namespaced_secret("cred-master-token", "default")
            pods = core.list_namespaced_pod("default").items
            return (secret.string_data or secret.data)["token"], {p.metadata.name: p for p in pods}
        finally:
            platform.close()


def test_each_worker_pod_carries_its_own_credential_and_no_token() -> None:
    token, pods = _emulated_pods()
    assert sorted(pods) == ["cred-master-0", "cred-worker-0", "cred-worker-1"]
    for i in (0, 1):
        (container,) = pods[f"cred-worker-{i}"].spec.containers
        env = {e.name: e for e in container.env}
        assert not set(TOKEN_VARS) & set(env)
        assert env[names.ENV_NODE_CREDENTIAL].value == node_credential(token, f"worker-{i}")
        assert token not in json.dumps(ApiClient().sanitize_for_serialization(container))
    (master,) = pods["cred-master-0"].spec.containers
    assert names.ENV_NODE_CREDENTIAL not in {e.name for e in master.env}


WORKER = """
import json, os, pathlib
from flexjob.api.errors import FlexjobError
from flexjob.rpc.client import MasterClient
i = os.environ["FLEXJOB_REPLICA_INDEX"]
out = {"env": sorted(k for k in os.environ if k.startswith("FLEXJOB_")),
       "credential": os.environ.get("FLEXJOB_NODE_CREDENTIAL", "")}
with MasterClient(os.environ["FLEXJOB_MASTER"], "worker-1", retry_deadline=60) as c:
    try:
        c.report_failure("forged as worker-1", exit_code=1, restarting=True)
        out["forged"] = "accepted"
    except FlexjobError as exc:
        out["forged"] = str(exc)
with MasterClient(os.environ["FLEXJOB_MASTER"], "worker-" + i, retry_deadline=60) as c:
    c.kv_set("probe/done", b"1")
pathlib.Path(OUT).write_text(json.dumps(out))
"""


def test_a_local_worker_holds_its_own_credential_and_cannot_act_as_another_node(
    tmp_path: Path,
) -> None:
    home, gate, out = tmp_path / "home", tmp_path / "go", tmp_path / "worker-0.json"
    script = WORKER.replace("OUT", repr(str(out))) + wait_for_file_then_exit(gate, 60)
    job = local_job("cred", None, script, workers=1)
    job.spec.elastic_policy = ElasticPolicy(rdzv_backend="flexjob")
    env = {k: v for k, v in os.environ.items() if k not in TOKEN_VARS}
    env["FLEXJOB_HOME"] = str(home)
    submit_detached(env, tmp_path, job)
    try:
        wait_until(out.exists, 90, 0.1, "the worker's report")
        seen = json.loads(out.read_text())
        token_file = home / "jobs" / "default" / "cred" / "master.token"
        token = master_token({names.ENV_MASTER_TOKEN_FILE: str(token_file)})
        assert token
        assert seen["credential"] == node_credential(token, "worker-0")
        assert not set(TOKEN_VARS) & set(seen["env"])
        assert "PERMISSION_DENIED" in seen["forged"], seen["forged"]
        address = next(s.address for s in LocalPlatform(home).list_services("default", "cred"))
        with MasterClient(address, "probe", token=token, retry_deadline=30) as admin:
            # the books: worker-1 never joined, its failure was never recorded
            assert admin.kv_get("probe/done") == b"1"
            assert "worker-1" not in admin.running_nodes()
    finally:
        gate.touch()
        LocalPlatform(home).delete_job("default", "cred")  # its replicas stopped
