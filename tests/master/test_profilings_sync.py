"""The master copies its trainers' profilings from its KV store into ``status.profilings``."""

import json
from typing import Any

import pytest

from flexjob.api import names
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.main import start_master
from flexjob.master.profilings_sync import ProfilingsSync
from flexjob.platform.local import LocalPlatform
from flexjob.rpc.client import MasterClient
from tests.support.polling import wait_until

DOC = {"steps": [{"nodes": 1, "replicas": 2, "localBatch": 32, "stepTime": 0.1}]}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _sync(kv: dict[str, bytes], written: list[dict[str, Any]], clock: Clock) -> ProfilingsSync:
    return ProfilingsSync(kv.get, written.append, every_s=5.0, clock=clock)


def test_a_changed_document_is_copied_once() -> None:
    kv: dict[str, bytes] = {}
    written: list[dict[str, Any]] = []
    clock = Clock()
    sync = _sync(kv, written, clock)
    assert not sync.tick()  # nothing published yet
    kv[names.KV_PROFILINGS] = json.dumps(DOC).encode()
    clock.now += 5
    assert sync.tick() and written == [DOC]
    clock.now += 5
    assert not sync.tick() and written == [DOC]  # unchanged: not written again
    kv[names.KV_PROFILINGS] = json.dumps({"gradNoiseScale": 300.0}).encode()
    assert not sync.tick()  # too soon after the last look
    assert sync.tick(force=True) and written[-1] == {"gradNoiseScale": 300.0}


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b'"text"'])
def test_a_document_that_is_not_a_json_object_is_never_written(raw: bytes) -> None:
    written: list[dict[str, Any]] = []
    sync = _sync({names.KV_PROFILINGS: raw}, written, Clock())
    assert not sync.tick(force=True) and written == []


def test_a_master_with_a_platform_writes_what_its_trainers_publish_into_the_job_status(
    home_platform: LocalPlatform,
) -> None:
    platform = home_platform
    config = MasterConfig(
        job_name="j", namespace="ns", scale_plan_platform="local", host_store=False
    )
    with start_master(config, token="") as master:
        master.profilings.every_s = 0.0  # type: ignore[union-attr]
        client = MasterClient(master.address, "worker-0")
        client.kv_set(names.KV_PROFILINGS, json.dumps(DOC).encode())

        def copied() -> bool:
            status = platform.get_job("ns", "j").status
            return status is not None and status.profilings == DOC

        wait_until(copied, timeout=30, what="status.profilings never got the trainers' doc")


def test_a_master_without_a_platform_copies_nothing() -> None:
    with start_master(MasterConfig(job_name="j", host_store=False), token="") as master:
        assert master.profilings is None
