"""Join → first step with and without a warm spare (``flexjob agent --spare``).

Starts ``flexjob run --nnodes 1:3`` with 2 nodes of ``benchmarks/recovery_train.py`` (the
trainer helpers; the run's own agents find no spare), then ``--reps`` times, alternating:
  cold   ``flexjob agent --master ... recovery_train.py`` joins a third node; seconds from
         that command's start to the node's first training step,
  warm   the same command, with a warm spare ready in its ``--spare-dir`` (started and warmed
         before the clock starts: the spare's start-up is not what a join waits for).
After each join the third node gets SIGTERM and the world shrinks back to 2. Prints the
medians, the ratio warm / cold, and the machine's load before and after. Not part of the
test suite.

    PYTHONPATH=. python benchmarks/spare_join.py --reps 3
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recovery import SCRIPT, wait_for
from recovery_steps import Step, read_steps, steady

ROOT = Path(__file__).resolve().parents[1]


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


class Bench:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.steps = work / "steps"
        self.steps.mkdir()
        self.none = work / "no-spares"
        self.spares = work / "spares"
        self.env = dict(os.environ, BENCH_DIR=str(self.steps))
        self.env["PYTHONPATH"] = f"{ROOT}:{self.env.get('PYTHONPATH', '')}"
        self.procs: list[subprocess.Popen[bytes]] = []

    def spawn(self, cmd: list[str], name: str, **env: str) -> subprocess.Popen[bytes]:
        out = (self.work / f"{name}.out").open("ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "flexjob", *cmd],
            env={**self.env, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def start(self) -> str:
        job = self.work / "job"
        self.spawn(
            [
                "run", "--nnodes", "1:3", "--start-nodes", "2", "--job-dir", str(job),
                "--no-progress", "--heartbeat-timeout", "3", SCRIPT,
            ],
            "run",
            FLEXJOB_SPARE_DIR=str(self.none),
        )  # fmt: skip
        addr = job / "master.addr"
        master = wait_for("master", lambda: addr.exists() and addr.read_text().strip(), 120)
        wait_for("2 nodes stepping", lambda: steady(self.steps, 2, 0, 2.0), 180)
        return str(master)

    def join(self, master: str, node: str, warm: bool) -> float:
        """Seconds from the joining command's start to its node's first step."""
        if warm:
            self.spawn(["agent", "--spare", "--spare-dir", str(self.spares)], f"spare-{node}")
            wait_for("a warm spare", lambda: next(self.spares.glob("spare-*.sock"), None), 180)
        t0 = time.time()
        joiner = self.spawn(
            [
                "agent", "--master", master, "--node-id", node, "--run-dir",
                str(self.work / "job"), "--spare-dir", str(self.spares if warm else self.none),
                SCRIPT,
            ],
            node,
            # flexjob run's job token (0600 in its job dir): a joining node presents it.
            FLEXJOB_MASTER_TOKEN_FILE=str(self.work / "job" / "master.token"),
        )  # fmt: skip
        first = wait_for(
            f"{node}'s first step",
            lambda: next((s for s in read_steps(self.steps) if s.node == node), None),
            180,
        )
        assert isinstance(first, Step)
        wait_for("3 nodes stepping", lambda: steady(self.steps, 3, first.t, 1.0), 120)
        joiner.send_signal(signal.SIGTERM)
        joiner.wait(60)
        t_left = time.time()
        wait_for("back to 2 nodes", lambda: steady(self.steps, 2, t_left, 1.0), 120)
        return first.t - t0

    def stop(self) -> None:
        (self.steps / "stop").touch()
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    print(f"before: {_load()}", flush=True)
    got: dict[str, list[float]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory(prefix="flexjob-spare-join-") as tmp:
        bench = Bench(Path(tmp))
        try:
            master = bench.start()
            for rep in range(args.reps):
                for mode in ("cold", "warm"):
                    seconds = bench.join(master, f"join-{mode}-{rep}", mode == "warm")
                    got[mode].append(seconds)
                    print(f"rep {rep} {mode}: {seconds:.2f} s", flush=True)
        finally:
            bench.stop()
    print(f"after:  {_load()}")
    cold, warm = (statistics.median(got[m]) for m in ("cold", "warm"))
    print(f"{'join → first step (median s)':<34} {'warm spare':>10} {'cold':>8} {'ratio':>7}")
    print(f"{'3rd node joins 2 (1:3, gloo)':<34} {warm:>10.2f} {cold:>8.2f} {warm / cold:>6.2f}x")
    print(f"ratio: warm / cold; {args.reps} reps each, alternating; baseline: the same")
    print("`flexjob agent` command with no spare (it starts its workers itself)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
