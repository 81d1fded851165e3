"""The job master's token on the local platform, end to end: the operator writes it to a 0600
file in the job directory and hands every replica its path in the environment (never a command
line); the replicas' clients are let in with it, a client without it is refused."""

import os
import stat
from pathlib import Path

import psutil
import pytest

from flexjob.api import ElasticPolicy, JobPhase
from flexjob.api.errors import FlexjobError
from flexjob.platform.local import LocalPlatform
from flexjob.rpc.auth import master_token
from flexjob.rpc.client import MasterClient
from tests.support.local_jobs import (
    finished_job,
    local_job,
    submit_detached,
    wait_for_file_then_exit,
)
from tests.support.polling import wait_until

WORKER = """
import os
from flexjob.rpc.client import MasterClient
i = os.environ["FLEXJOB_REPLICA_INDEX"]
with MasterClient(os.environ["FLEXJOB_MASTER"], "worker-" + i, retry_deadline=60) as c:
    c.kv_set("hello/" + i, b"authorised")
"""


def test_replicas_reach_the_master_with_the_job_token_and_others_are_refused(
    home: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "go"
    job = local_job("token", None, WORKER + wait_for_file_then_exit(gate, 60), workers=2)
    job.spec.elastic_policy = ElasticPolicy(rdzv_backend="flexjob")
    env = {**os.environ, "FLEXJOB_HOME": str(home)}
    env.pop("FLEXJOB_MASTER_TOKEN", None)
    env.pop("FLEXJOB_MASTER_TOKEN_FILE", None)
    submit_detached(env, tmp_path, job)

    token_file = home / "jobs" / "default" / "token" / "master.token"
    wait_until(token_file.exists, 30, 0.1, "the token file")
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = master_token({"FLEXJOB_MASTER_TOKEN_FILE": str(token_file)})
    assert token

    platform = LocalPlatform(home)
    master = wait_until(
        lambda: next((s.address for s in platform.list_services("default", "token")), None),
        30,
        0.1,
        "the master's service",
    )
    with MasterClient(master, "probe", token=token, retry_deadline=30) as client:
        for i in (0, 1):
            wait_until(lambda i=i: client.kv_get(f"hello/{i}"), 60, 0.1, f"worker-{i}")
    for name, wrong in (("intruder", ""), ("guesser", "wrong")):
        with (
            MasterClient(master, name, token=wrong, retry_deadline=1) as other,
            pytest.raises(FlexjobError, match="UNAUTHENTICATED"),
        ):
            other.report_shard(0)

    for replica in platform.list_replicas("default", "token"):
        pid = platform.pid(replica.namespace, replica.name)
        assert pid is not None
        family = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        assert all(token not in " ".join(p.cmdline()) for p in family), replica.name

    gate.touch()
    done = finished_job(platform, "token")
    assert done.status is not None and done.status.phase is JobPhase.SUCCEEDED
