"""Start-up benchmark: a 2-process hello world under ``flexjob run`` against ``torchrun``.

Each system runs ``--nproc-per-node 2`` of a script that prints its rank and exits (no
collective), ``--reps`` times, alternating. Measured from the command's start:
  first line   the first line a rank prints (start-up: imports, master, rendezvous),
  exit         the command's exit (start-up + the script + shutting everything down).
For flexjob also where the time goes, from its master's log (``--job-dir``):
  master up    the master serves (the run process's imports + the master's, torch included),
  world formed the rendezvous round completed (agents' imports + workers importing torch).
Prints one table of medians with ratios (torchrun / flexjob; below 1: flexjob is slower).
With ``--previous DIR`` (a checkout of an earlier flexjob, e.g. ``git worktree add DIR main``)
that version runs too, alternating with the others (its package first on ``PYTHONPATH``), and
a second ratio compares it with this one (previous / flexjob). Not part of the test suite.

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

HELLO = "import os\nprint('hello from rank', os.environ['RANK'], flush=True)\n"
BIN = Path(sys.executable).parent


def _timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Seconds to the first output line and to the exit of ``cmd``."""
    start = time.time()
    proc = subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    assert proc.stdout is not None
    first = float("nan")
    for line in proc.stdout:
        if "hello from rank" in line and first != first:
            first = time.time() - start
    code = proc.wait()
    if code != 0:
        raise RuntimeError(f"{cmd[0]} exited with {code}")
    return first, time.time() - start


def _event_times(log: Path, start: float) -> dict[str, float]:
    """Seconds from ``start`` to the master's events (its log's timestamps)."""
    out: dict[str, float] = {}
    for line in log.read_text().splitlines():
        found = re.match(r"(\S+ \S+) .* event=(master_started|round_completed)", line)
        if found and found.group(2) not in out:
            when = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            out[found.group(2)] = when - start
    return out


def run_flexjob(work: Path, rep: int, package: str = "") -> dict[str, float]:
    """One ``flexjob run``; ``package``: the checkout to import flexjob from (default: this
    interpreter's)."""
    job_dir = work / f"job-{rep}{'-previous' if package else ''}"
    env = {**os.environ, "PYTHONPATH": package} if package else None
    start = time.time()
    first, end = _timed(
        [
            str(BIN / "python"), "-m", "flexjob", "run", "--nproc-per-node", "2",
            "--no-progress", "--job-dir", str(job_dir), "hello.py",
        ],
        work,
        env,
    )  # fmt: skip
    events = _event_times(job_dir / "master.log", start)
    return {
        "master up": events.get("master_started", float("nan")),
        "world formed": events.get("round_completed", float("nan")),
        "first line": first,
        "exit": end,
    }


def run_torchrun(work: Path, rep: int) -> dict[str, float]:
    first, end = _timed(
        [str(BIN / "torchrun"), "--standalone", "--nproc-per-node", "2", "hello.py"], work
    )
    return {"first line": first, "exit": end}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--previous", default="", help="checkout of an earlier flexjob")
    args = parser.parse_args()
    previous = str(Path(args.previous).resolve()) if args.previous else ""
    results: dict[str, list[dict[str, float]]] = {"flexjob": [], "torchrun": []}
    if previous:
        results["previous"] = []
    with tempfile.TemporaryDirectory(prefix="flexjob-startup-") as tmp:
        work = Path(tmp)
        (work / "hello.py").write_text(HELLO)
        for rep in range(args.reps):
            results["flexjob"].append(run_flexjob(work, rep))
            results["torchrun"].append(run_torchrun(work, rep))
            if previous:
                results["previous"].append(run_flexjob(work, rep, previous))
    median = {
        name: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        for name, runs in results.items()
    }
    f, t = median["flexjob"], median["torchrun"]
    p = median.get("previous", {})
    title = "hello world, 2 processes (median s)"
    extra = f" {'previous':>9} {'ratio':>7}" if previous else ""
    print(f"{title:<38} {'flexjob':>9} {'torchrun':>9} {'ratio':>7}{extra}")
    for key in ("master up", "world formed", "first line", "exit"):
        tv = t.get(key, float("nan"))
        ratio = tv / f[key] if tv == tv else float("nan")
        row = f"{key:<38} {f[key]:>9.2f} {tv:>9.2f} {ratio:>6.2f}x"
        if previous:
            row += f" {p[key]:>9.2f} {p[key] / f[key]:>6.2f}x"
        print(row)
    print(f"baseline: torchrun --standalone (torch 2.13), {args.reps} reps each, alternating")
    if previous:
        print(f"previous: flexjob from {previous}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
