"""Exit benchmark: how long ``flexjob run --nnodes 2 examples/digits_ddp.py`` takes to end
after its last data, against issue 37's bound (1 s) and, with ``--previous DIR`` (a checkout
of an earlier flexjob, e.g. ``git worktree add DIR main``), against that version.

Each rep runs the job with its output piped and stamps every line as it arrives:
  last rank line  the last line a rank printed (``[worker-N/rankR]: ...``) to the exit,
  summary         ``flexjob: job done: ...`` to the exit.
Prints one table of medians, with ratios to the bound (at most 1.0: within it) and, with
``--previous``, previous / this. Not part of the test suite.

    PYTHONPATH=. python benchmarks/run_exit.py --reps 3 [--previous /tmp/flexjob-main]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from benchmarks.table import print_table

BOUND_S = 1.0
COMMAND = ["-m", "flexjob", "run", "--nnodes", "2", "examples/digits_ddp.py"]


def one_run(pythonpath: str | None) -> tuple[float, float]:
    """(last rank line, summary) to exit, in seconds."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.Popen(
        [sys.executable, *COMMAND],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=pythonpath or None,  # ``-m`` puts the cwd first on sys.path: the checkout's own
    )
    assert proc.stdout is not None
    rank = summary = None
    for line in proc.stdout:
        now = time.monotonic()
        if line.startswith("[worker-"):
            rank = now
        elif line.startswith("flexjob: job done:"):
            summary = now
    code = proc.wait()
    end = time.monotonic()
    if code != 0 or rank is None or summary is None:
        raise SystemExit(f"the run failed (exit {code}) or printed no rank line / summary")
    return end - rank, end - summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--previous", help="a checkout of an earlier flexjob")
    args = parser.parse_args()
    systems = {"flexjob": None, **({"previous": args.previous} if args.previous else {})}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in systems}
    for _ in range(args.reps):
        for name, path in systems.items():  # alternating: the same load for both
            samples[name].append(one_run(path))
    rows = [["system", "last rank line -> exit s", "summary -> exit s", f"/ bound {BOUND_S} s"]]
    medians = {}
    for name, runs in samples.items():
        rank = statistics.median(r for r, _ in runs)
        summary = statistics.median(s for _, s in runs)
        medians[name] = rank
        rows.append([name, f"{rank:.2f}", f"{summary:.2f}", f"{rank / BOUND_S:.2f}"])
    print_table(rows)
    if "previous" in medians:
        ratio = medians["previous"] / medians["flexjob"]
        print(f"previous / flexjob (last rank line -> exit): {ratio:.2f}")
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
