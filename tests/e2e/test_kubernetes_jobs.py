"""Whole jobs on the Kubernetes path: kopf operator, emulated API, pods run by the process
kubelet, real gloo between pods on their own loopback addresses."""

import re
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.k8s_cluster import cluster, digits_job

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]
NAME = "digits-elastic"
EPOCHS = 3
SAMPLES = 1437  # the digits training split
ACCURACY = re.compile(r"digits: accuracy=([0-9.]+) steps=\d+ world_size=(\d+)")


async def test_digits_job_trains_to_success_through_the_operator(tmp_path: Path) -> None:
    async with cluster(tmp_path) as c:
        await c.apply_job(digits_job(epochs=EPOCHS))
        phase = await c.wait_phase(NAME, ("Succeeded", "Failed"), 120)
        logs = {p: c.log(p) for p in (f"{NAME}-master-0", f"{NAME}-worker-0", f"{NAME}-worker-1")}
        assert phase == "Succeeded", logs
        [(accuracy, world)] = [m for p in logs.values() for m in ACCURACY.findall(p)]
        assert float(accuracy) >= 0.9 and world == "2"
        assert_every_sample_once(c.master_state(NAME), EPOCHS)


def assert_every_sample_once(state: dict[str, Any], epochs: int) -> None:
    """The master's books: every epoch completed, every sample of each done once
    (``job done: N/N samples``), no shard counted twice."""
    (dataset,) = state["shards"].values()
    assert sorted(dataset["completed"]) == list(range(epochs))
    assert dataset["samples_done"] == epochs * SAMPLES
