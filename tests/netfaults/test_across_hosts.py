"""Jobs across test hosts, the way users run them on several machines: ``flexjob run
--address`` on one host, ``flexjob agent --master`` on the others, a token since nothing is
on loopback; every sample trained exactly once."""

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.netfaults.cluster import start_job
from tests.support.hosts import HostNet

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

Net = Callable[[int], HostNet]


def test_a_job_on_three_hosts_trains_every_sample_once(host_net: Net, tmp_path: Path) -> None:
    net = host_net(3)
    job = start_job(net, tmp_path)
    assert job.master.startswith(net[0].address + ":")
    code = job.wait(240)
    assert code == 0, job.output()
    check = job.check()
    assert (check.lost, check.duplicated) == (0, 0), f"{check}\n{job.output()}"
    master_log = (job.workdir / "job" / "master.log").read_text()
    assert "world_size=3 members=" in master_log  # a world of one node per host
