"""Recovery benchmark: flexjob's in-place fast path against stock torchrun (c10d), same script.

For each system: start 2 nodes of ``--nnodes 1:3``, then ``--kills N`` times (default 3):
  join → first step   a third node starts; seconds until its first training step,
  pause of the others the longest gap of the running nodes between their last step before
                      and their first step in the world with the new node (and, for
                      reference, the median gap between their steps in the 5 s before),
  kill → resume       one training process of worker-1 gets SIGKILL; seconds until the
                      survivors step in a new world (torchrun: the restarted workers' first step),
  node kill → resume  the joined node (agent and workers) gets SIGKILL.
The table shows each measure's median over the N rounds (every value is printed too). Two
baselines: ``torchrun`` (tuned: ``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1`` and
``--rdzv-conf=last_call_timeout=1``) and ``torchrun-stock`` (torchrun's defaults). Prints one
table with ratios (baseline / flexjob).

Victims are found by identity, never by command-line text: a flexjob node's training
processes and agent by its agent's worker status files (``agent.workers.node_workers``), a
torchrun node's by the processes under the launcher this benchmark started that wrote a step
line of that node. A kill that finds no victim, and any flexjob phase that does not finish in
its wait, fails the run (exit 1, the reason printed); a torchrun phase that does not finish
(stock torchrun's joins can fail outright: its later rounds are then worker kills on a fresh
pair) shows ``nan``.
``--quick`` waits less for steady stepping between phases. With ``$FLEXJOB_PROF`` set to a file,
each kill's ``time.time()`` is appended to it (``bench.sigkill``). Not part of the test suite.

    PYTHONPATH=. python benchmarks/recovery.py --kills 3
"""

from __future__ import annotations

import argparse
import contextlib
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
from recovery_steps import Step, max_gap, median_gap, read_steps, resume_after, steady, switch_gap

from flexjob.agent.workers import node_workers
from flexjob.api import names
from flexjob.platform.ports import free_port

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = str(ROOT / "benchmarks" / "recovery_train.py")


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
        """``node``'s live training processes (empty when none is found)."""
        raise NotImplementedError

    def node_tree(self, node: str) -> list[psutil.Process]:
        """``node``'s agent (launcher) and every process under it."""
        raise NotImplementedError

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


def _alive(pid: int) -> psutil.Process | None:
    try:
        proc = psutil.Process(pid)
        return proc if proc.status() != psutil.STATUS_ZOMBIE else None
    except psutil.Error:
        return None


def _tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return [root]


class NoVictim(RuntimeError):
    """A kill found nothing to kill: the benchmark would measure nothing."""


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
        # flexjob run's job token (0600 in its job dir): a joining node presents it.
        token = {names.ENV_MASTER_TOKEN_FILE: str(self.run_dir / names.MASTER_TOKEN_FILE)}
        self.spawn(node, cmd, {**self.env(node), **token})

    @property
    def run_dir(self) -> Path:
        return self.work / "job"  # ``--job-dir``: every agent's ``--run-dir``

    def workers_of(self, node: str) -> list[psutil.Process]:
        """From the node's agent's status files: each names its agent (pid in the file's
        name) and the training process that wrote it; a process counts only while it lives
        under that agent."""
        found = []
        for rec in node_workers(self.run_dir, node):
            proc, agent = _alive(rec.pid), _alive(rec.agent_pid)
            if proc is not None and agent is not None and proc in agent.children(recursive=True):
                found.append(proc)
        return found

    def node_tree(self, node: str) -> list[psutil.Process]:
        agents = {rec.agent_pid for rec in node_workers(self.run_dir, node)}
        live = [a for a in (_alive(pid) for pid in sorted(agents)) if a is not None]
        return [p for a in live for p in _tree(a)]


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

    def workers_of(self, node: str) -> list[psutil.Process]:
        """The processes under ``node``'s launcher that wrote a step line as ``node``."""
        launcher = self.procs.get(node)
        if launcher is None or launcher.poll() is not None:
            return []
        stepped = {s.pid for s in read_steps(self.work) if s.node == node}
        return [p for p in _tree(psutil.Process(launcher.pid))[1:] if p.pid in stepped]

    def node_tree(self, node: str) -> list[psutil.Process]:
        launcher = self.procs.get(node)
        root = _alive(launcher.pid) if launcher is not None else None
        return _tree(root) if root is not None else []


class TorchrunStock(Torchrun):
    tuned = False


JOIN = "join → first step (s)"
PAUSE = "pause of the others at join (s)"
#: The others' median gap between steps in the 5 s before the join: one step as the loaded
#: machine runs it, the part of the pause that is not the join's.
CALM = "  a step before the join, median (s)"
KILL = "kill worker → resume (s)"
NODE_KILL = "kill node → resume (s)"
PAIR = ("worker-0", "worker-1")


def start_two(system: System, warm: float) -> None:
    system.start()
    wait_for(f"{system.name}: 2 nodes stepping", lambda: steady(system.work, 2, 0, warm), 120)


def measure_join(system: System, node: str, warm: float, out: dict[str, list[float]]) -> bool:
    """``node`` joins the pair that trains; False when it never takes a step."""
    w = system.work
    others = set(PAIR)
    t_join = time.time()
    system.start_node(node)
    try:
        first = wait_for(
            f"{system.name}: {node}'s first step",
            lambda: next((s for s in read_steps(w) if s.node == node and s.t > t_join), None),
            120,
        )
    except TimeoutError as exc:
        if isinstance(system, Flexjob):
            raise
        # stock torchrun: joins can fail outright
        print(f"{system.name}: {exc}; measuring the kill on a fresh pair", file=sys.stderr)
        last = max((s.t for s in read_steps(w) if s.node in others), default=t_join)
        out[JOIN].append(float("nan"))
        out[PAUSE].append(max(max_gap(w, others, t_join, time.time()), time.time() - last))
        return False
    assert isinstance(first, Step)
    out[JOIN].append(first.t - t_join)
    wait_for(f"{system.name}: 3 nodes stepping", lambda: steady(w, 3, first.t, warm), 60)
    out[PAUSE].append(switch_gap(w, others, t_join, 3))
    out[CALM].append(median_gap(w, others, t_join - 5, t_join))
    return True


def kill(system: System, what: str, find: Callable[[], list[psutil.Process]]) -> float:
    """SIGKILL what ``find`` names (retried for 30 s while it names nothing: a process the
    agent is starting again); the kill's ``time.time()``. Raises ``NoVictim`` when nothing is
    found: a kill of nothing would measure the system at rest."""
    try:
        victims = wait_for(f"{system.name}: {what}", find, 30)
    except TimeoutError:
        raise NoVictim(
            f"{system.name}: the kill of {what} found no victim in 30 s (logs in {system.work})"
        ) from None
    assert isinstance(victims, list)
    t_kill = time.time()
    mark = os.environ.get("FLEXJOB_PROF")
    if mark:  # the profile's clock starts here (``time.time()``, as every step line)
        with open(mark, "a") as f:
            f.write(f"{t_kill:.4f} {os.getpid()} bench.sigkill\n")
    for p in victims:
        with contextlib.suppress(psutil.Error):
            p.kill()
    return t_kill


def resumed(system: System, t_kill: float, dead: str, what: str) -> float:
    """Seconds from ``t_kill`` until a node other than ``dead`` steps in a new generation."""
    got = wait_for(
        f"{system.name}: resume after {what}",
        lambda: resume_after(system.work, t_kill, exclude_node=dead),
        150,
    )
    assert isinstance(got, float)
    return got


def kill_worker(system: System) -> float:
    """SIGKILL worker-1's training process(es) (not worker-0's: it hosts torchrun's c10d
    store); seconds until the survivors step in a new world."""
    t_kill = kill(
        system, "the training processes of worker-1", lambda: system.workers_of("worker-1")
    )
    return resumed(system, t_kill, "worker-1", "worker kill")


def kill_node(system: System, node: str) -> float:
    """SIGKILL ``node``'s agent and workers; seconds until the others step in a new world."""
    t_kill = kill(system, f"node {node}", lambda: system.node_tree(node))
    return resumed(system, t_kill, node, "node kill")


def measure_round(system: System, node: str, warm: float, out: dict[str, list[float]]) -> bool:
    """One round: ``node`` joins, a worker of worker-1 is killed, then ``node`` is killed;
    each back to steady stepping. False when the join failed (the pair left may be broken:
    the next round starts on a fresh pair)."""
    if not measure_join(system, node, warm, out):
        return False
    out[KILL].append(kill_worker(system))
    settle(system, 3, warm, "kill")
    out[NODE_KILL].append(kill_node(system, node))
    settle(system, 2, warm, "node kill")
    return True


def settle(system: System, world: int, warm: float, after: str) -> None:
    """Wait until ``world`` nodes have stepped together for ``warm`` seconds."""
    t = time.time()
    wait_for(
        f"{system.name}: steady after {after}", lambda: steady(system.work, world, t, warm), 120
    )


@dataclass
class Result:
    values: dict[str, list[float]]
    failure: str = ""  # why the run of this system must fail ("" : it did not)

    def median(self, key: str) -> float:
        got = [v for v in self.values.get(key, []) if v == v]
        return statistics.median(got) if got else float("nan")


def run_system(cls: type[System], name: str, quick: bool, budget: float, kills: int) -> Result:
    """Measure ``kills`` rounds of one system within ``budget`` seconds."""
    out: dict[str, list[float]] = {JOIN: [], PAUSE: [], CALM: [], KILL: [], NODE_KILL: []}
    result = Result(out)
    warm = 2.0 if quick else 4.0
    started: list[System] = []

    def fresh() -> System:
        started.append(cls(name, Path(tempfile.mkdtemp(prefix=f"recovery-{name}-"))))
        start_two(started[-1], warm)
        return started[-1]

    signal.alarm(int(budget))
    try:
        system = fresh()
        joins = True  # until one fails (stock torchrun): then worker kills on a fresh pair
        for i in range(kills):
            if joins and measure_round(system, f"worker-{2 + i}", warm, out):
                continue
            if joins:
                joins = False
                system.stop()
                system = fresh()
            out[KILL].append(kill_worker(system))
            settle(system, 2, warm, "kill")
    except NoVictim as exc:
        result.failure = str(exc)
    except TimeoutError as exc:
        where = started[-1].work if started else "-"
        message = f"{name}: {exc} (logs in {where})"
        print(message, file=sys.stderr)
        if cls is Flexjob:
            result.failure = message
    finally:
        signal.alarm(0)
        for system in started:
            system.stop()
    for key, values in out.items():
        print(f"{name}: {key}: " + ", ".join(f"{v:.3f}" for v in values), flush=True)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="shorter waits for steady stepping")
    ap.add_argument(
        "--only", choices=["flexjob", "torchrun", "torchrun-stock"], help="measure one system"
    )
    ap.add_argument("--budget", type=float, default=None, help="seconds per system")
    ap.add_argument(
        "--kills",
        type=int,
        default=3,
        help="rounds (join, worker kill, node kill) per system; the table shows their medians",
    )
    args = ap.parse_args()
    if args.kills < 1:
        ap.error(f"--kills must be >= 1, got {args.kills}")
    budget = args.budget or (70.0 if args.quick else 150.0) * args.kills + 150.0
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("budget spent")))
    results: dict[str, Result] = {}
    systems: tuple[tuple[type[System], str], ...] = (
        (Flexjob, "flexjob"),
        (Torchrun, "torchrun"),
        (TorchrunStock, "torchrun-stock"),
    )
    load = os.getloadavg()[0]
    for cls, name in systems:
        if args.only and args.only != name:
            continue
        results[name] = run_system(cls, name, args.quick, budget, args.kills)
    signal.alarm(0)
    print_table(results, args.kills, (load, os.getloadavg()[0]))
    failures = [r.failure for r in results.values() if r.failure]
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


def print_table(results: dict[str, Result], kills: int, load: tuple[float, float]) -> None:
    keys = [
        k
        for k in (JOIN, PAUSE, CALM, KILL, NODE_KILL)
        if any(k in r.values for r in results.values())
    ]
    f = results.get("flexjob", Result({}))
    head = f"{f'median of {kills} (small MLP, gloo, 1:3 nodes)':<40} {'flexjob':>9}"
    for name in ("torchrun", "torchrun-stock"):
        head += f" {name:>14} {'ratio':>7}"
    print(head)
    for k in keys:
        fv = f.median(k)
        line = f"{k:<40} {fv:>9.3f}"
        for name in ("torchrun", "torchrun-stock"):
            bv = results.get(name, Result({})).median(k)
            ratio = bv / fv if fv and fv == fv and bv == bv else float("nan")
            line += f" {bv:>14.3f} {ratio:>6.1f}x"
        print(line)
    print("baselines: torchrun 2.13 c10d, tuned = TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 and")
    print("last_call_timeout=1; stock = torchrun's defaults. nan: did not happen within its wait.")
    print(f"load average (1 min) at start {load[0]:.1f}, at end {load[1]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
