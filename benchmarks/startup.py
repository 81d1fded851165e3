"""Start-up benchmark: 2 processes under ``flexjob run`` against ``torchrun``, same scripts.

Each system runs ``--nproc-per-node 2`` of two scripts, ``--reps`` times, alternating:
``hello`` prints its rank and exits (no collective); ``train`` is ``benchmarks/
recovery_train.py`` stopped after its first step (gloo, DDP; under flexjob the trainer
helpers: master shards, the world formed in place). Measured from the command's start:
  first line   the first line a rank prints (start-up: imports, master, rendezvous),
  first step   the first training step a rank logs (+ torch import, gloo group, DDP),
  exit         the command's exit (start-up + the script + shutting everything down).
For flexjob also where the time goes, from its master's log (``--job-dir``):
  master up    the master serves (the run process's imports + the master's),
  world formed the rendezvous round completed (agents' imports + workers importing torch).
For both, the CPU-seconds (user + system, ``proc_cpu``: ``/proc`` read every 20 ms) each kind
of process had used by the first line / first step: the launcher (``flexjob run`` or
``torchrun``), the master, the agent, the workers together and all. Under CPU contention
(other jobs on the machine) these, not the wall times, say what a start-up costs.
Prints one table of medians with ratios flexjob / torchrun (at most 1.0: flexjob is no
slower) and the machine's load average before and after.
With ``--previous DIR`` (a checkout of an earlier flexjob, e.g. ``git worktree add DIR main``)
that version runs too, alternating with the others (its package first on ``PYTHONPATH``), and
a second ratio compares it with this one (previous / flexjob). Then the master's TCPStore
start-up, each kind (``store_startup.py``; ``--only store`` for just that table). Not part of
the test suite.

    PYTHONPATH=. python benchmarks/startup.py --reps 3 [--previous /tmp/flexjob-main]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from proc_cpu import CpuWatch
from store_startup import store_table

HELLO = "import os\nprint('hello from rank', os.environ['RANK'], flush=True)\n"
BIN = Path(sys.executable).parent
TRAIN = Path(__file__).resolve().parent / "recovery_train.py"
ROOT = TRAIN.parents[1]


def _timed(
    cmd: list[str], cwd: Path, env: dict[str, str], steps: Path | None = None
) -> tuple[float, float, dict[str, list[float]]]:
    """Seconds to the first output line and to the exit of ``cmd``, and the CPU-seconds of
    its processes (per role, ``proc_cpu``) at its first step (``steps``: where it is logged)
    or else at its first line."""
    start = time.time()
    proc = subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    assert proc.stdout is not None
    first = float("nan")
    if steps is not None:
        watch = CpuWatch(proc.pid, lambda: any(f.stat().st_size for f in steps.glob("*.log")))
    else:
        watch = CpuWatch(proc.pid, lambda: first == first)
    for line in proc.stdout:
        if "hello from rank" in line and first != first:
            first = time.time() - start
    code = proc.wait()
    if code != 0:
        raise RuntimeError(f"{cmd[0]} exited with {code}")
    return first, time.time() - start, watch.stop()


def _event_times(log: Path, start: float) -> dict[str, float]:
    """Seconds from ``start`` to the master's events (its log's timestamps)."""
    out: dict[str, float] = {}
    for line in log.read_text().splitlines():
        found = re.match(r"(\S+ \S+) .* event=(master_started|round_completed)", line)
        if found and found.group(2) not in out:
            when = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            out[found.group(2)] = when - start
    return out


def _first_step(steps: Path, start: float) -> float:
    """Seconds from ``start`` to the first step logged under ``steps`` (recovery_train.py)."""
    times = [
        float(line.split()[0]) for f in steps.glob("*.log") for line in f.read_text().splitlines()
    ]
    return min(times, default=float("nan")) - start


def _env(work: Path, what: str, package: str = "") -> dict[str, str]:
    """The environment of one run: ``package`` first on the path; the step log dir for
    ``train`` (stopped after one step)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package, str(ROOT)) if p)
    if what == "train":
        steps = work / f"steps-{time.monotonic_ns()}"
        steps.mkdir()
        env.update(BENCH_DIR=str(steps), BENCH_MAX_STEPS="1")
    return env


def _script(what: str) -> str:
    return "hello.py" if what == "hello" else str(TRAIN)


def run_flexjob(work: Path, rep: int, what: str, package: str = "") -> dict[str, float]:
    """One ``flexjob run``; ``package``: the checkout to import flexjob from (default: this
    interpreter's)."""
    job_dir = work / f"job-{what}-{rep}{'-previous' if package else ''}"
    env = _env(work, what, package)
    start = time.time()
    first, end, cpu = _timed(
        [
            str(BIN / "python"), "-m", "flexjob", "run", "--nproc-per-node", "2",
            "--no-progress", "--job-dir", str(job_dir), _script(what),
        ],
        work,
        env,
        _steps(env),
    )  # fmt: skip
    events = _event_times(job_dir / "master.log", start)
    out = {
        "master up": events.get("master_started", float("nan")),
        "world formed": events.get("round_completed", float("nan")),
        "exit": end,
    }
    if what == "hello":
        out["first line"] = first
    else:
        out["first step"] = _first_step(Path(env["BENCH_DIR"]), start)
    return out | _cpu_rows(cpu, what)


def _steps(env: dict[str, str]) -> Path | None:
    return Path(env["BENCH_DIR"]) if "BENCH_DIR" in env else None


def _cpu_rows(cpu: dict[str, list[float]], what: str) -> dict[str, float]:
    """CPU-seconds at the first line / step: the launcher (``flexjob run`` or ``torchrun``),
    master, agent, the workers together and all of them."""
    at = "first line" if what == "hello" else "first step"
    kinds = {"launcher": ("run", "torchrun"), "master": ("master",), "agent": ("agent",)}
    rows = {
        f"CPU-s at {at}: {kind}": sum(sum(cpu[r]) for r in roles if r in cpu)
        for kind, roles in kinds.items()
        if any(r in cpu for r in roles)  # torchrun has no master or agent of its own
    }
    rows[f"CPU-s at {at}: workers"] = sum(cpu.get("worker", []))
    rows[f"CPU-s at {at}: all"] = sum(sum(v) for v in cpu.values())
    return rows


def run_torchrun(work: Path, rep: int, what: str) -> dict[str, float]:
    env = _env(work, what)
    start = time.time()
    first, end, cpu = _timed(
        [str(BIN / "torchrun"), "--standalone", "--nproc-per-node", "2", _script(what)],
        work,
        env,
        _steps(env),
    )
    if what == "hello":
        return {"first line": first, "exit": end} | _cpu_rows(cpu, what)
    out = {"first step": _first_step(Path(env["BENCH_DIR"]), start), "exit": end}
    return out | _cpu_rows(cpu, what)


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def _table(what: str, results: dict[str, list[dict[str, float]]], previous: str) -> None:
    median = {
        name: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        for name, runs in results.items()
    }
    f, t = median["flexjob"], median["torchrun"]
    p = median.get("previous", {})
    title = f"{what}, 2 processes (median s)"
    extra = f" {'previous':>9} {'ratio':>7}" if previous else ""
    print(f"{title:<38} {'flexjob':>9} {'torchrun':>9} {'ratio':>7}{extra}")
    for key in f:
        tv = t.get(key, float("nan"))
        ratio = f[key] / tv if tv == tv and tv else float("nan")
        row = f"{key:<38} {f[key]:>9.2f} {tv:>9.2f} {ratio:>6.2f}x"
        if previous:
            row += f" {p[key]:>9.2f} {f[key] / p[key] if p[key] else float('nan'):>6.2f}x"
        print(row)
    key = "first line" if "first line" in f else "first step"
    for name, runs in results.items():
        each = " ".join(f"{r[key]:.2f}" for r in runs)
        print(f"  {key}, {name}, each rep: {each} (min {min(r[key] for r in runs):.2f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--previous", default="", help="checkout of an earlier flexjob")
    parser.add_argument(
        "--only", choices=["hello", "train", "store"], help="one (default: all)", default=None
    )
    args = parser.parse_args()
    if args.only == "store":
        store_table(args.reps)
        return 0
    previous = str(Path(args.previous).resolve()) if args.previous else ""
    scripts = [args.only] if args.only else ["hello", "train"]
    print(f"before: {_load()}", flush=True)
    results: dict[str, dict[str, list[dict[str, float]]]] = {
        what: {"flexjob": [], "torchrun": [], **({"previous": []} if previous else {})}
        for what in scripts
    }
    with tempfile.TemporaryDirectory(prefix="flexjob-startup-") as tmp:
        work = Path(tmp)
        (work / "hello.py").write_text(HELLO)
        for rep in range(args.reps):
            for what in scripts:
                got = results[what]
                got["flexjob"].append(run_flexjob(work, rep, what))
                got["torchrun"].append(run_torchrun(work, rep, what))
                if previous:
                    got["previous"].append(run_flexjob(work, rep, what, previous))
    print(f"after:  {_load()}")
    for what in scripts:
        title = {"hello": "hello world", "train": "train, first step"}[what]
        _table(title, results[what], previous)
    print("ratio: flexjob / torchrun (<= 1.0: flexjob no slower); baseline: torchrun --standalone")
    print(f"(torch 2.13), {args.reps} reps each, alternating", end="")
    print(f"; previous: flexjob from {previous} (ratio flexjob / previous)" if previous else "")
    if not args.only:
        store_table(args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
