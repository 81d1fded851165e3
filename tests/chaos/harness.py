"""The chaos harness: run a job with ``flexjob run`` or ``flexjob submit``, inject faults into
its real processes with real signals at random points, and check every sample.

Shared by the short suite (``tests/chaos``) and the long form (``benchmarks/chaos.py``).
``check_samples`` is the exactly-once checker: each (epoch, index) of the dataset must be
trained in exactly one step (``chaos_train.py``: every rank logs the whole step right after its
all-reduce, so a step counts once any rank finished it, and a sample trained again in a later
step after a rank died past that point is a duplicate).
``orphans`` finds processes of a job still alive after it ended. Killing the operator
(``flexjob submit`` runs the job's local operator) restarts it with
``flexjob operator --platform local NAME``, which adopts the replicas still running; from then
on that process is the job's.
"""

from __future__ import annotations

import contextlib
import enum
import os
import random
import re
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import yaml

from tests.support.manifests import manifest
from tests.support.polling import job_ended, wait_until

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(Path(__file__).with_name("chaos_train.py"))
TRAIN_SIZE = 1437  # digits: 1797 samples, 20% held out (``digits_ddp.load_data``)
BATCH = 32
LOG_ENV = "CHAOS_LOG_DIR"


class Fault(enum.StrEnum):
    KILL_TRAINER = "kill-trainer"
    KILL_AGENT = "kill-agent"
    KILL_MASTER = "kill-master"
    STOP_TRAINER = "stop-trainer"  # SIGSTOP: a hung trainer
    KILL_OPERATOR = "kill-operator"  # SIGKILL of `flexjob submit` (the local operator), restarted


#: The faults each mode can take (``flexjob run`` has no operator).
MODE_FAULTS = {
    "run": [f for f in Fault if f is not Fault.KILL_OPERATOR],
    "submit": list(Fault),
}


#: The command line marking each kind of process of a job.
SHELLS = frozenset({"sh", "dash", "bash"})
ROLE_MARKERS = {
    "trainer": ("flexjob.agent.bootstrap",),
    "agent": ("-m flexjob agent", "-m flexjob.agent.process"),  # the operator's; run's
    "master": ("-m flexjob master", "-m flexjob.master.process"),
}
FAULT_ROLE = {
    Fault.KILL_TRAINER: "trainer",
    Fault.KILL_AGENT: "agent",
    Fault.KILL_MASTER: "master",
    Fault.STOP_TRAINER: "trainer",
    Fault.KILL_OPERATOR: "operator",
}


@dataclass(frozen=True, slots=True)
class SampleCheck:
    expected: int
    trained: int
    lost: int
    duplicated: int


def read_samples(log_dir: Path) -> Counter[tuple[int, int]]:
    """How many distinct steps trained each (epoch, index) (lines ``epoch round:step idx,...``;
    every rank of a step logs the whole step)."""
    seen: set[tuple[str, int, int]] = set()
    for path in log_dir.glob("*.samples"):
        for line in path.read_text().splitlines():
            parts = line.split(" ")
            if len(parts) != 3 or not parts[2]:
                continue  # a torn last line cannot happen (one write), but never count one
            epoch, key, indices = int(parts[0]), parts[1], parts[2]
            seen.update((key, epoch, int(i)) for i in indices.split(","))
    return Counter((epoch, i) for _, epoch, i in seen)


def check_samples(log_dir: Path, epochs: int, size: int = TRAIN_SIZE) -> SampleCheck:
    """Every (epoch, index) trained exactly once? Lost and duplicated samples, counted."""
    counts = read_samples(log_dir)
    expected = {(e, i) for e in range(epochs) for i in range(size)}
    lost = len(expected - set(counts))
    duplicated = sum(c - 1 for c in counts.values() if c > 1)
    return SampleCheck(len(expected), sum(counts.values()), lost, duplicated)


@dataclass
class ChaosJob:
    """One job under test: the ``flexjob run`` / ``flexjob submit`` process and its files."""

    mode: str  # "run" | "submit"
    proc: subprocess.Popen[bytes]
    workdir: Path
    log_dir: Path
    out: Path
    nodes: int
    epochs: int
    env: dict[str, str]
    faults: list[str] = field(default_factory=list)
    name: str = "chaos"  # the job's name (``flexjob submit``)

    @property
    def expected(self) -> int:
        return self.epochs * TRAIN_SIZE

    def family(self) -> list[psutil.Process]:
        """The job's processes but ``proc``: its children, and those it left behind when it
        was killed (replicas a restarted operator adopted are not its children)."""
        found: dict[int, psutil.Process] = {}
        with contextlib.suppress(psutil.Error):
            found = {p.pid: p for p in psutil.Process(self.proc.pid).children(recursive=True)}
        for p in orphans(self.log_dir):
            if p.pid != self.proc.pid:
                found.setdefault(p.pid, p)
        return list(found.values())

    def role(self, name: str) -> list[psutil.Process]:
        if name == "operator":
            with contextlib.suppress(psutil.Error):
                return [psutil.Process(self.proc.pid)] if self.proc.poll() is None else []
            return []
        marker = ROLE_MARKERS[name]
        found = []
        for p in self.family():
            with contextlib.suppress(psutil.Error):
                if p.name() in SHELLS:
                    continue  # the local platform's exit-code wrapper around a replica
                command = " ".join(p.cmdline())
                if any(m in command for m in marker) and p.status() != psutil.STATUS_ZOMBIE:
                    found.append(p)
        return found

    def trained(self) -> int:
        return sum(read_samples(self.log_dir).values())

    def healthy(self) -> bool:
        """Every node's trainer runs (none stopped), the master is up, so is the operator."""
        if self.proc.poll() is not None:
            return False
        trainers = self.role("trainer")
        with contextlib.suppress(psutil.Error):
            if any(t.status() == psutil.STATUS_STOPPED for t in trainers):
                return False
        return len(trainers) >= self.nodes and len(self.role("master")) == 1

    def inject(self, fault: Fault, rng: random.Random) -> str:
        """Send ``fault``'s signal to a random process of its role; returns what was hit."""
        victims = self.role(FAULT_ROLE[fault])
        if not victims:
            raise RuntimeError(f"no {FAULT_ROLE[fault]} process to inject {fault} into")
        victim = rng.choice(victims)
        sig = signal.SIGSTOP if fault is Fault.STOP_TRAINER else signal.SIGKILL
        with contextlib.suppress(psutil.Error):
            victim.send_signal(sig)
        what = f"{fault} pid {victim.pid} at {self.trained()}/{self.expected} samples"
        if fault is Fault.KILL_OPERATOR:
            self.proc.wait(30)
            self.restart_operator()
        self.faults.append(what)
        return what

    def restart_operator(self) -> None:
        """Run the job's local operator again (``flexjob operator --platform local NAME``),
        its output appended to the job's; from now on it is the job's process."""
        cmd = [sys.executable, "-m", "flexjob", "operator", "--platform", "local", self.name]
        with self.out.open("ab") as f:
            self.proc = subprocess.Popen(
                cmd, stdout=f, stderr=subprocess.STDOUT, env=self.env, cwd=ROOT
            )

    def wait(self, timeout: float) -> int:
        return job_ended(self.proc, timeout, self.output)

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    def accuracy(self) -> float | None:
        text = self.output() + "".join(
            p.read_text(errors="replace") for p in self.workdir.glob("home/jobs/**/*.log")
        )
        found = re.findall(r"accuracy=([0-9.]+)", text)
        return float(found[-1]) if found else None

    def stop(self) -> None:
        """End the job and everything it started (after a failed test)."""
        family = self.family()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for p in family + orphans(self.log_dir):
            with contextlib.suppress(psutil.Error):
                p.kill()


def _env(log_dir: Path, home: Path) -> dict[str, str]:
    pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {
        **os.environ,
        LOG_ENV: str(log_dir),
        "FLEXJOB_HOME": str(home),
        "PYTHONPATH": pythonpath,
        "PATH": path,
    }


def _launch(
    mode: str,
    workdir: Path,
    cmd: list[str],
    nodes: int,
    epochs: int,
    extra_env: dict[str, str] | None = None,
) -> ChaosJob:
    workdir.mkdir(parents=True, exist_ok=True)
    log_dir, out = workdir / "samples", workdir / f"{mode}.out"
    env = {**_env(log_dir, workdir / "home"), **(extra_env or {})}
    with out.open("wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    return ChaosJob(mode, proc, workdir, log_dir, out, nodes, epochs, env)


def start_run(
    workdir: Path,
    *,
    nodes: int = 2,
    epochs: int = 3,
    step_delay: float = 0.02,
    hang_timeout: float = 12.0,
    max_restarts: int = 3,
    env: dict[str, str] | None = None,
) -> ChaosJob:
    """``flexjob run --nnodes NODES`` of the chaos script (``env``: extra variables, the
    script's knobs)."""
    cmd = [
        sys.executable, "-m", "flexjob", "run", "--job-dir", str(workdir / "job"),
        "--no-progress", "--nnodes", str(nodes), "--heartbeat-timeout", "5",
        "--hang-timeout", str(hang_timeout), "--max-restarts", str(max_restarts),
        SCRIPT, "--epochs", str(epochs), "--step-delay", str(step_delay),
    ]  # fmt: skip
    return _launch("run", workdir, cmd, nodes, epochs, env)


def start_submit(
    workdir: Path,
    *,
    nodes: int = 2,
    epochs: int = 3,
    step_delay: float = 0.02,
    hang_timeout: float = 12.0,
) -> ChaosJob:
    """``flexjob submit`` of an ElasticJob whose workers run the chaos script."""
    log_dir = workdir / "samples"
    args = ["--hang-timeout", str(hang_timeout), SCRIPT, "--epochs", str(epochs)]
    container = {
        "name": "main",
        "image": "flexjob:latest",
        "command": [sys.executable, "-m", "flexjob", "agent"],
        "args": [*args, "--step-delay", str(step_delay)],
        "env": [{"name": LOG_ENV, "value": str(log_dir)}],
    }
    worker = {
        "replicas": nodes,
        "minReplicas": nodes,
        "maxReplicas": nodes,
        "restartPolicy": "OnFailure",
        "template": {"spec": {"containers": [container]}},
    }
    spec = manifest(
        "ElasticJob",
        "chaos",
        {
            "distributionStrategy": "AllreduceStrategy",
            "cleanPodPolicy": "Running",
            "backoffLimit": 6,
            "elasticPolicy": {"rdzvBackend": "flexjob", "nProcPerNode": 1},
            "replicaSpecs": {"worker": worker},
        },
    )
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "chaos.yaml"
    path.write_text(yaml.safe_dump(spec))
    cmd = [sys.executable, "-m", "flexjob", "submit", str(path)]
    return _launch("submit", workdir, cmd, nodes, epochs)


def run_faults(
    job: ChaosJob,
    faults: list[Fault],
    rng: random.Random,
    *,
    window: tuple[float, float] = (0.1, 0.8),
    timeout: float = 120.0,
) -> None:
    """Inject ``faults`` one at a time at random points of the job's progress, each once the
    job recovered from the one before (every trainer back, samples flowing again)."""
    points = sorted(rng.uniform(*window) for _ in faults)
    for fault, point in zip(faults, points, strict=True):
        at = int(point * job.expected)
        wait_until(lambda a=at: job.trained() >= a, timeout, 0.2, f"{at} samples trained")  # type: ignore[misc]
        ended_or_healthy = lambda: job.proc.poll() is not None or job.healthy()  # noqa: E731
        wait_until(ended_or_healthy, timeout, 0.2, "a healthy job")
        if job.proc.poll() is not None or job.trained() >= 0.95 * job.expected:
            return  # the job ended (or nearly) before this fault's turn
        job.inject(fault, rng)
        after = job.trained()
        flowing = lambda a=after: job.trained() >= a + 4 * BATCH  # type: ignore[misc]  # noqa: E731
        wait_until(flowing, timeout, 0.2, f"samples flowing again after {job.faults[-1]}")


def orphans(log_dir: Path) -> list[psutil.Process]:
    """Processes started for the job whose logs go to ``log_dir`` that are still alive."""
    found = []
    for p in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error):
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            if p.environ().get(LOG_ENV) == str(log_dir):
                found.append(p)
    return found


def wait_no_orphans(log_dir: Path, timeout: float = 15.0) -> list[psutil.Process]:
    """Orphans still alive after ``timeout`` (a stopping process may take a moment)."""
    with contextlib.suppress(AssertionError):
        wait_until(lambda: not orphans(log_dir), timeout, 0.25, "no orphans")
    return orphans(log_dir)
