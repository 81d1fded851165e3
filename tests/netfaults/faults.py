"""Network faults on a job across three test hosts, and what each cost.

Host 0 runs ``flexjob run --address`` (the master and node ``worker-0``), hosts 1 and 2 one
``flexjob agent`` each (``node-1``, ``node-2``). Each ``NetFault`` is injected once the job
trained ``at`` of its samples and healed ``seconds`` later (``seconds=None``: for the whole
job). ``run_fault`` returns a ``FaultResult``: the job's exit code (143: it had not ended
in the fault's ``timeout`` and was stopped), the exactly-once check of
every sample, the final accuracy, the time from the fault to the master's first reaction in its
log (a node dead, a world re-formed, a shard timed out), the longest time after the fault with
no sample trained (how long until training went on; a whole-job fault counts from the first
sample), and samples per second from the first sample seen to the last (start-up left out).

Shared by ``tests/netfaults/test_faults.py`` and ``benchmarks/network_faults.py``.
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.chaos.harness import SampleCheck
from tests.netfaults.cluster import HostJob, start_job
from tests.support.hosts import HostNet

#: Seconds without a heartbeat before the master declares a node dead (``--heartbeat-timeout``).
HEARTBEAT_TIMEOUT = 5.0
REACTIONS = re.compile(
    r"^(\S+ \S+) .*event=(node_dead|round_completed|shard_timed_out|node_failed|node_joined)"
)


@dataclass(frozen=True)
class NetFault:
    name: str
    inject: Callable[[HostNet, HostJob], None]
    seconds: float | None = None  # healed after this long; None: never (the whole job)
    at: float = 0.25  # share of the samples trained when it is injected
    timeout: float = 240.0  # seconds the job gets before it is taken for hung and stopped


def master_ports(job: HostJob) -> list[int]:
    """The master's gRPC port and its TCP store's (the ports a worker cut from its peers
    still reaches on the master's host)."""
    log = (job.workdir / "job" / "master.log").read_text()
    store = re.search(r"event=store_started .*store=\S+:(\d+)", log)
    ports = [int(job.master.rsplit(":", 1)[1])]
    return ports + ([int(store.group(1))] if store else [])


def cut_from_master(net: HostNet, job: HostJob) -> None:
    """node-2's host loses the master's ports on host 0; its all-reduce peers (worker-0 on
    host 0, node-1) it keeps."""
    net[2].cut_ports(net[0], master_ports(job))


def _cut_from_peers(net: HostNet, job: HostJob) -> None:
    net[2].block([net[0], net[1]], keep=master_ports(job))


def _slow_lossy(net: HostNet, job: HostJob) -> None:
    net[2].delay(0.2)
    net[2].loss(0.05)


FAULTS = [
    NetFault("agent cut from master 2.5 s (< node-death timeout)", cut_from_master, 2.5),
    NetFault("agent cut from master 15 s (> node-death timeout)", cut_from_master, 15.0),
    NetFault("worker cut from its peers, not the master (half-open)", _cut_from_peers, 20.0),
    NetFault("200 ms delay + 5% loss on one node, whole job", _slow_lossy, None, 0.0, 900.0),
    NetFault("master's host cut from everyone 20 s", lambda net, _: net[0].block(), 20.0),
]
NO_FAULT = NetFault("none (same hosts)", lambda net, job: None, None, 0.0)


@dataclass(frozen=True)
class FaultResult:
    fault: str
    code: int
    check: SampleCheck
    accuracy: float | None
    detect_s: float | None
    resume_s: float
    seconds: float
    throughput: float
    output: str


def _log_time(stamp: str) -> float:
    when = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")
    return when.replace(tzinfo=datetime.UTC).timestamp()


def _first_reaction(job: HostJob, since: float) -> float | None:
    path = job.workdir / "job" / "master.log"
    for line in path.read_text(errors="replace").splitlines():
        m = REACTIONS.match(line)
        if m and _log_time(m.group(1)) >= since:
            return _log_time(m.group(1)) - since
    return None


def _rate(samples: int, first: float | None, last: float | None) -> float:
    """Samples per second between the first and the last sample seen (start-up left out)."""
    if first is None or last is None or last <= first:
        return 0.0
    return samples / (last - first)


def run_fault(net: HostNet, workdir: Path, fault: NetFault, *, epochs: int = 1) -> FaultResult:
    job = start_job(net, workdir, epochs=epochs, heartbeat_timeout=HEARTBEAT_TIMEOUT)
    start = time.monotonic()
    deadline = start + fault.timeout
    at = int(fault.at * job.expected)
    while job.trained() < at and job.run.poll() is None and time.monotonic() < deadline:  # type: ignore[union-attr]
        time.sleep(0.1)
    wall, injected = time.time(), time.monotonic()
    fault.inject(net, job)
    healed = False
    first_count = last_count = job.trained()
    # A fault injected before training began (a whole-job one) counts from the first sample.
    first_change = last_change = injected if last_count else None
    longest = 0.0
    while job.run.poll() is None and time.monotonic() < deadline:  # type: ignore[union-attr]
        now = time.monotonic()
        if fault.seconds is not None and not healed and now - injected >= fault.seconds:
            for host in net.hosts:
                host.heal()
            healed = True
        count = job.trained()
        if count != last_count:
            if last_change is None:
                first_count, first_change = count, now
            else:
                longest = max(longest, now - last_change)
            last_count, last_change = count, now
        time.sleep(0.1)
    if job.run.poll() is None:  # type: ignore[union-attr]
        job.run.terminate()  # type: ignore[union-attr]  # past its time: a hung job, exit 143
    code = job.wait(60)
    seconds = time.monotonic() - start
    return FaultResult(
        fault.name,
        code,
        job.check(),
        job.accuracy(),
        _first_reaction(job, wall) if fault is not NO_FAULT else None,
        longest,
        seconds,
        _rate(last_count - first_count, first_change, last_change),
        job.output(),
    )
