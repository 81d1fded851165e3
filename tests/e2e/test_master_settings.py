"""``spec.masterSettings`` on the local platform: a setting given in the job spec reaches the
master the operator starts for the job (its start-up line says the node-death timeout)."""

import os
from pathlib import Path

import pytest

from flexjob.api import ElasticPolicy, JobPhase
from flexjob.api.master_settings import MasterSettingsSpec, NodeHealthSettings
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import (
    finished_job,
    local_job,
    submit_detached,
    wait_for_file_then_exit,
)
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


def test_a_node_death_timeout_in_the_spec_reaches_the_operators_master(
    home: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "go"
    job = local_job("tuned", None, wait_for_file_then_exit(gate, 60), workers=1)
    job.spec.elastic_policy = ElasticPolicy(rdzv_backend="flexjob")
    job.spec.master_settings = MasterSettingsSpec(
        node_health=NodeHealthSettings(heartbeat_timeout=17.5)
    )
    spec = submit_detached({**os.environ, "FLEXJOB_HOME": str(home)}, tmp_path, job)
    assert "heartbeatTimeout: 17.5" in spec.read_text()  # what the user writes
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
    done = finished_job(LocalPlatform(home), "tuned")
    assert done.status is not None and done.status.phase is JobPhase.SUCCEEDED
