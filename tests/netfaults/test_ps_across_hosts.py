"""A PS job across hosts with the PS host cut from the workers: ``flexjob run --ps 1`` on host
0 (master, PS, node ``worker-0``), one ``flexjob agent`` on each other host, the CTR example
with its shard log; once a quarter of the shards are done, hosts 1 and 2 lose everything on
host 0 but the master's ports for ``CUT_S`` seconds. Every sample of every epoch is trained
once and the AUC goal met. Minutes: marked ``netfault`` (``-m netfault``)."""

import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.chaos.harness import ROOT, _env
from tests.e2e.test_ps_jobs import assert_every_shard_once_and_auc_met, ctr_command
from tests.netfaults.cluster import HostJob
from tests.netfaults.faults import HEARTBEAT_TIMEOUT, master_ports
from tests.support.hosts import HostNet
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netfault, pytest.mark.timeout(1000)]

CUT_S = 20.0
SCRIPT = str(ROOT / "examples" / "ctr" / "train.py")


def accepted(shard_log: Path) -> int:
    text = shard_log.read_text() if shard_log.exists() else ""
    return len(re.findall(r"^accepted ", text, re.M))


def test_a_ps_job_whose_ps_host_is_cut_from_the_workers_trains_every_sample_once(
    host_net: Callable[[int], HostNet], tmp_path: Path
) -> None:
    net = host_net(3)
    shard_log = tmp_path / "shards.log"
    env = {
        **_env(tmp_path / "samples", tmp_path / "home"),
        "FLEXJOB_MASTER_TOKEN": secrets.token_hex(16),
    }
    job = HostJob(net, tmp_path, 1, env, script=SCRIPT)
    args = ctr_command([], shard_log, step_delay=0.01)
    flags = ["--heartbeat-timeout", str(HEARTBEAT_TIMEOUT), "--max-restarts", "3"]
    job.start_run(net[0], 3, args, [*flags, "--ps", "1"])
    for i in (1, 2):
        job.start_agent(net[i], f"node-{i}", args)
    wait_until(
        lambda: accepted(shard_log) >= 12 or job.run.poll() is not None, 300, 0.2, "12 shards"
    )  # type: ignore[union-attr]
    before, cut = accepted(shard_log), time.monotonic()
    for i in (1, 2):
        net[i].block([net[0]], keep=master_ports(job))
    wait_until(lambda: time.monotonic() - cut >= CUT_S, CUT_S + 5, 0.2, "the cut's end")
    during = accepted(shard_log) - before
    for i in (1, 2):
        net[i].heal()
    healed = time.monotonic()
    wait_until(lambda: accepted(shard_log) > before + during, 300, 0.2, "a shard after the cut")
    resumed = time.monotonic() - healed
    code = job.wait(600)
    print(
        f"PS host cut {CUT_S:.0f} s: {during} shards accepted during the cut, the next one "
        f"{resumed:.1f} s after the heal, exit {code}"
    )
    master_log = (tmp_path / "job" / "master.log").read_text(errors="replace")
    assert code == 0, job.output()
    assert_every_shard_once_and_auc_met(shard_log, job.output(), master_log)
