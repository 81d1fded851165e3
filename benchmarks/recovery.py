"""Recovery benchmark: flexjob's in-place fast path against stock torchrun (c10d), same script.

For each system: start 2 nodes of ``--nnodes 1:3``, then measure
  join → first step   a third node starts; seconds until its first training step,
  pause of the others the longest gap between steps of the running nodes around that join,
  kill → resume       one training process gets SIGKILL; seconds until the survivors step
                      in a new world (torchrun: the restarted workers' first step),
  node kill → resume  (full mode) a whole node (agent and workers) gets SIGKILL.
Two baselines: ``torchrun`` (tuned: ``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1`` and
``--rdzv-conf=last_call_timeout=1``) and ``torchrun-stock`` (torchrun's defaults). Prints one
table with ratios (baseline / flexjob); a phase that did not finish in its wait shows ``nan``
and the run goes on with the next phase.
``--quick`` skips the node kill and uses shorter waits; ``--kills N`` repeats the worker kill
N times (each once the world is whole again) and shows the median. With ``$FLEXJOB_PROF`` set
to a file, each kill's ``time.time()`` is appended to it (``bench.sigkill``). Not part of the
test suite.

    PYTHONPATH=. python benchmarks/recovery.py --quick
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from flexjob.platform.ports import free_port

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = str(ROOT / "benchmarks" / "recovery_train.py")


@dataclass(frozen=True)
class Step:
    t: float
    node: str
    pid: int
    round: int
    world: int


def read_steps(d: Path) -> list[Step]:
    steps = []
    for f in d.glob("*.log"):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) == 6:
                steps.append(
                    Step(float(parts[0]), parts[1], int(parts[2]), int(parts[3]), int(parts[4]))
                )
    return sorted(steps, key=lambda s: s.t)


def wait_for(what: str, fn: Callable[[], object], timeout: float) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.1)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


@dataclass
class System:
    name: str
    work: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    master: str = ""

    def env(self, node: str) -> dict[str, str]:
        env = dict(os.environ, BENCH_DIR=str(self.work), BENCH_NODE=node)
        env["PYTHONPATH"] = f"{ROOT}:{env.get('PYTHONPATH', '')}"
        return env

    def spawn(self, node: str, cmd: list[str], env: dict[str, str]) -> None:
        out = (self.work / f"{node}.out").open("ab")
        self.procs[node] = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )

    def start_node(self, node: str) -> None:
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def workers_of(self, node: str) -> list[psutil.Process]:
        root = psutil.Process(self.procs[node].pid)
        return [
            p
            for p in root.children(recursive=True)
            if SCRIPT in " ".join(_cmd(p)) or "bootstrap" in " ".join(_cmd(p))
        ]

    def node_tree(self, node: str) -> list[psutil.Process]:
        root = psutil.Process(self.procs[node].pid)
        return [root, *root.children(recursive=True)]

    def stop(self) -> None:
        (self.work / "stop").touch()
        time.sleep(1.0)
        for p in self.procs.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for p in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)


def _cmd(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


class Flexjob(System):
    def start(self) -> None:
        cmd = [
            sys.executable,
            "-m",
            "flexjob",
            "run",
            "--nnodes",
            "1:3",
            "--start-nodes",
            "2",
            "--job-dir",
            str(self.work / "job"),
            "--no-progress",
            "--heartbeat-timeout",
            "3",
            "--max-restarts",
            "100",
            SCRIPT,
        ]
        self.spawn("run", cmd, self.env("run"))
        addr = self.work / "job" / "master.addr"
        self.master = str(
            wait_for("master", lambda: addr.exists() and addr.read_text().strip(), 60)
        )

    def start_node(self, node: str) -> None:
        cmd = [
            sys.executable,
            "-m",
            "flexjob",
            "agent",
            "--master",
            self.master,
            "--node-id",
            node,
            "--run-dir",
            str(self.work / "job"),
            "--max-restarts",
            "100",
            SCRIPT,
        ]
        self.spawn(node, cmd, self.env(node))

    def workers_of(self, node: str) -> list[psutil.Process]:
        if node in self.procs:
            return super().workers_of(node)
        root = psutil.Process(self.procs["run"].pid)
        agents = [p for p in root.children() if f"--node-id {node} " in " ".join(_cmd(p)) + " "]
        return [c for a in agents for c in a.children(recursive=True)]

    def node_tree(self, node: str) -> list[psutil.Process]:
        if node in self.procs:
            return super().node_tree(node)
        root = psutil.Process(self.procs["run"].pid)
        agents = [p for p in root.children() if f"--node-id {node} " in " ".join(_cmd(p)) + " "]
        return [t for a in agents for t in [a, *a.children(recursive=True)]]


class Torchrun(System):
    tuned = True

    def start(self) -> None:
        self.master = f"127.0.0.1:{free_port()}"
        for node in ("worker-0", "worker-1"):
            self.start_node(node)

    def start_node(self, node: str) -> None:
        env = self.env(node)
        if self.tuned:
            env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            "1:3",
            "--nproc-per-node",
            "1",
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            self.master,
            "--rdzv-id",
            "bench",
            *(["--rdzv-conf", "last_call_timeout=1"] if self.tuned else []),
            "--max-restarts",
            "10",
            SCRIPT,
        ]
        self.spawn(node, cmd, env)


class TorchrunStock(Torchrun):
    tuned = False


def steady(work: Path, world: int, since: float, seconds: float) -> bool:
    steps = [s for s in read_steps(work) if s.t >= since and s.world == world]
    return bool(steps) and steps[-1].t - steps[0].t >= seconds


def resume_after(work: Path, t0: float, exclude_node: str | None = None) -> float | None:
    """Seconds from ``t0`` to the first step of a new generation (a (pid, round) not seen
    stepping before ``t0``) on a node other than ``exclude_node``."""
    steps = read_steps(work)
    before = {(s.pid, s.round) for s in steps if s.t < t0}
    for s in steps:
        if s.t > t0 and (s.pid, s.round) not in before and s.node != exclude_node:
            return s.t - t0
    return None


def max_gap(work: Path, nodes: set[str], t0: float, t1: float) -> float:
    gaps = []
    for node in nodes:
        ts = [s.t for s in read_steps(work) if s.node == node and t0 - 1 <= s.t <= t1]
        gaps += [b - a for a, b in itertools.pairwise(ts)]
    return max(gaps, default=float("nan"))


def start_two(system: System, warm: float) -> None:
    system.start()
    wait_for(f"{system.name}: 2 nodes stepping", lambda: steady(system.work, 2, 0, warm), 120)


def measure_join(system: System, warm: float, out: dict[str, float]) -> bool:
    """A third node joins two that train; False when it never takes a step."""
    w = system.work
    others = {"worker-0", "worker-1"}
    t_join = time.time()
    system.start_node("worker-2")
    try:
        first = wait_for(
            f"{system.name}: worker-2's first step",
            lambda: next((s for s in read_steps(w) if s.node == "worker-2" and s.t > t_join), None),
            120,
        )
    except TimeoutError as exc:  # stock torchrun: joins can fail outright
        print(f"{system.name}: {exc}; measuring the kills on a fresh pair", file=sys.stderr)
        last = max((s.t for s in read_steps(w) if s.node in others), default=t_join)
        out["join → first step (s)"] = float("nan")
        out["pause of the others at join (s)"] = max(
            max_gap(w, others, t_join, time.time()), time.time() - last
        )
        return False
    assert isinstance(first, Step)
    out["join → first step (s)"] = first.t - t_join
    wait_for(f"{system.name}: 3 nodes stepping", lambda: steady(w, 3, first.t, warm), 60)
    out["pause of the others at join (s)"] = max_gap(w, others, t_join, first.t + 1)
    return True


def kill_worker(system: System) -> float:
    """SIGKILL worker-1's training process(es) (not worker-0's: it hosts torchrun's c10d
    store); seconds until the survivors step in a new world."""
    w = system.work
    victim = wait_for(
        f"{system.name}: a worker of worker-1", lambda: system.workers_of("worker-1"), 30
    )
    assert isinstance(victim, list)
    t_kill = time.time()
    mark = os.environ.get("FLEXJOB_PROF")
    if mark:  # the profile's clock starts here (``time.time()``, as every step line)
        with open(mark, "a") as f:
            f.write(f"{t_kill:.4f} {os.getpid()} bench.sigkill\n")
    for p in victim:
        with contextlib.suppress(psutil.Error):
            p.kill()
    wait_for(
        f"{system.name}: resume after worker kill",
        lambda: resume_after(w, t_kill, exclude_node="worker-1"),
        150,
    )
    return resume_after(w, t_kill, exclude_node="worker-1") or 0.0


def measure_kills(
    system: System, warm: float, with_node_kill: bool, out: dict[str, float], kills: int = 1
) -> None:
    w = system.work
    world = read_steps(w)[-1].world  # the world each kill waits to be back to
    times = [kill_worker(system)]
    for _ in range(kills - 1):
        t_after = time.time()
        wait_for(
            f"{system.name}: steady after kill",
            lambda t=t_after: steady(w, world, t, warm),  # type: ignore[misc]
            120,
        )
        times.append(kill_worker(system))
    if kills > 1:
        print(f"{system.name}: kill worker → resume (s): " + ", ".join(f"{t:.3f}" for t in times))
    out["kill worker → resume (s)"] = statistics.median(times)
    if with_node_kill:
        t_after = time.time()
        wait_for(f"{system.name}: steady after kill", lambda: steady(w, 3, t_after, warm), 120)
        t_node = time.time()
        for p in system.node_tree("worker-2"):
            with contextlib.suppress(psutil.Error):
                p.kill()
        wait_for(
            f"{system.name}: resume after node kill",
            lambda: resume_after(w, t_node, exclude_node="worker-2"),
            150,
        )
        out["kill node → resume (s)"] = resume_after(w, t_node, exclude_node="worker-2") or 0.0


def run_system(
    cls: type[System], name: str, quick: bool, budget: float, kills: int = 1
) -> dict[str, float]:
    """Measure one system within ``budget`` seconds; a failed join re-starts a fresh pair."""
    out: dict[str, float] = {}
    warm = 2.0 if quick else 4.0
    started: list[System] = []

    def fresh() -> System:
        started.append(cls(name, Path(tempfile.mkdtemp(prefix=f"recovery-{name}-"))))
        start_two(started[-1], warm)
        return started[-1]

    signal.alarm(int(budget))
    try:
        system = fresh()
        joined = measure_join(system, warm, out)
        if not joined:
            system.stop()
            system = fresh()
        measure_kills(system, warm, joined and not quick, out, kills)
    except TimeoutError as exc:
        where = started[-1].work if started else "-"
        print(f"{name}: {exc} (logs in {where})", file=sys.stderr)
    finally:
        signal.alarm(0)
        for system in started:
            system.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="join and worker kill only, short waits")
    ap.add_argument(
        "--only", choices=["flexjob", "torchrun", "torchrun-stock"], help="measure one system"
    )
    ap.add_argument("--budget", type=float, default=None, help="seconds per system")
    ap.add_argument(
        "--kills",
        type=int,
        default=1,
        help="worker kills per system (the table shows their median; each value is printed)",
    )
    args = ap.parse_args()
    budget = args.budget or (200.0 if args.quick else 400.0)
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("budget spent")))
    results: dict[str, dict[str, float]] = {}
    systems: tuple[tuple[type[System], str], ...] = (
        (Flexjob, "flexjob"),
        (Torchrun, "torchrun"),
        (TorchrunStock, "torchrun-stock"),
    )
    for cls, name in systems:
        if args.only and args.only != name:
            continue
        results[name] = run_system(cls, name, args.quick, budget + 20.0 * args.kills, args.kills)
    signal.alarm(0)
    print_table(results)
    return 0


def print_table(results: dict[str, dict[str, float]]) -> None:
    rows = sorted({k for r in results.values() for k in r}, key=lambda k: ("join" not in k, k))
    f = results.get("flexjob", {})
    head = f"{'workload (small MLP, gloo, 1:3 nodes)':<40} {'flexjob':>9}"
    for name in ("torchrun", "torchrun-stock"):
        head += f" {name:>14} {'ratio':>7}"
    print(head)
    for k in rows:
        fv = f.get(k, float("nan"))
        line = f"{k:<40} {fv:>9.2f}"
        for name in ("torchrun", "torchrun-stock"):
            bv = results.get(name, {}).get(k, float("nan"))
            ratio = bv / fv if fv and fv == fv and bv == bv else float("nan")
            line += f" {bv:>14.2f} {ratio:>6.1f}x"
        print(line)
    print("baselines: torchrun 2.13 c10d, tuned = TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 and")
    print("last_call_timeout=1; stock = torchrun's defaults. nan: did not happen within its wait.")


if __name__ == "__main__":
    sys.exit(main())
