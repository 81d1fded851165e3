"""``spec.masterSettings`` on the local platform: a setting given in the job spec reaches the
master the operator starts for the job (its start-up line says the node-death timeout)."""

import os
from pathlib import Path

import pytest

from flexjob.api import ElasticPolicy, JobPhase
from flexjob.api.load import dump_yaml
from flexjob.api.master_settings import MasterSettingsSpec, NodeHealthSettings
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import local_job, run_flexjob
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

WORKER = """
import pathlib, time
gate = pathlib.Path(GATE); end = time.time() + 60
while not gate.exists() and time.time() < end: time.sleep(0.05)
"""


def test_a_node_death_timeout_in_the_spec_reaches_the_operators_master(
    home: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "go"
    job = local_job("tuned", None, WORKER.replace("GATE", repr(str(gate))), workers=1)
    job.spec.elastic_policy = ElasticPolicy(rdzv_backend="flexjob")
    job.spec.master_settings = MasterSettingsSpec(
        node_health=NodeHealthSettings(heartbeat_timeout=17.5)
    )
    spec = tmp_path / "job.yaml"
    spec.write_text(dump_yaml(job.to_wire()))
    assert "heartbeatTimeout: 17.5" in spec.read_text()  # what the user writes
    env = {**os.environ, "FLEXJOB_HOME": str(home)}
    assert run_flexjob(env, "submit", "--detach", str(spec)).returncode == 0
    log = home / "jobs" / "default" / "tuned" / "logs" / "master-0.log"
    try:
        started = wait_until(
            lambda: next(
                (
                    line
                    for line in (log.read_text().splitlines() if log.exists() else [])
                    if "event=master_started" in line
                ),
                None,
            ),
            60,
            0.2,
            "the master's start",
        )
        assert "heartbeat_timeout=17.5" in started
    finally:
        gate.touch()
    platform = LocalPlatform(home)
    done = wait_until(
        lambda: (j := platform.get_job("default", "tuned")).status and j.status.phase.finished,
        60,
        0.2,
        "the job to finish",
    )
    assert done and platform.get_job("default", "tuned").status.phase is JobPhase.SUCCEEDED
