"""A node declared dead that comes back, on real hosts: node-2's host is cut from the master's
ports longer than the node-death timeout (its all-reduce peers it keeps), so the master
declares it dead while it trains on; once the link heals, its calls are refused as fenced, its
agent stops its workers and joins again as a new member, and every sample is still trained
exactly once. Minutes: marked ``netfault`` (``-m netfault``)."""

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.netfaults.faults import HEARTBEAT_TIMEOUT, NetFault, cut_from_master, run_fault
from tests.support.hosts import HostNet

pytestmark = [pytest.mark.e2e, pytest.mark.netfault, pytest.mark.timeout(1000)]

#: Two node-death timeouts: the master surely declares it dead while it is cut off, and the
#: job still has data for it when it comes back.
CUT_S = 2 * HEARTBEAT_TIMEOUT
NODE = "node-2"
#: Long enough that node-2 comes back while data is left for it.
EPOCHS = 5


def test_a_node_declared_dead_that_comes_back_rejoins_as_a_new_member_and_nothing_counts_twice(
    host_net: Callable[[int], HostNet], tmp_path: Path
) -> None:
    fault = NetFault("a node declared dead that comes back", cut_from_master, CUT_S, at=0.1)
    r = run_fault(host_net(3), tmp_path, fault, epochs=EPOCHS)
    context = f"{r}\n{r.output}"
    print(f"{r.fault}: detected {r.detect_s} s, longest stall {r.resume_s:.1f} s, {r.check}")
    master_log = (tmp_path / "job" / "master.log").read_text(errors="replace")
    assert r.code == 0, context
    assert (r.check.lost, r.check.duplicated) == (0, 0), context
    dead = re.findall(rf"event=node_dead .*node={NODE} reason=(.*)$", master_log, re.M)
    assert dead == ["'heartbeat timeout'"], master_log  # once: its return is no second death
    joined = re.findall(rf"event=node_member .*node={NODE} incarnation=(\d+)", master_log)
    members = [int(i) for i in joined]
    assert len(members) >= 2 and members == sorted(set(members)), master_log  # a new member
    agent_log = (tmp_path / f"{NODE}.out").read_text(errors="replace")
    assert "declared dead by the master" in agent_log, context
