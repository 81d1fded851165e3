"""Console-script benchmark: the installed ``flexjob`` script (``flexjob.__main__:main``,
which ends a finished command without the interpreter's teardown) against the script it
replaced (``sys.exit(flexjob.cli.main:app())``, what pip generated for the old entry point).

Each command runs ``--reps`` times with both, alternately; the table has the median wall time
of each and the ratio old / new (above 1.0: the new script is faster). Not part of the test
suite.

    PYTHONPATH=. .venv/bin/python benchmarks/console_exit.py --reps 10
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.table import print_table

SCRIPT = Path(sys.executable).parent / "flexjob"
#: The console script pip wrote for ``flexjob = "flexjob.cli.main:app"``.
OLD = "import sys\nfrom flexjob.cli.main import app\nsys.exit(app())\n"
SPEC = "examples/specs/digits-elastic.yaml"
COMMANDS = (("--version",), ("validate", SPEC), ("convert", SPEC), ("manifests", "crds"))


def seconds(command: list[str]) -> float:
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, check=False)
    end = time.monotonic()
    if done.returncode != 0:
        raise SystemExit(f"{command} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return end - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    reps = parser.parse_args().reps
    rows = [["command", "flexjob script (s)", "old script (s)", "old / new"]]
    for args in COMMANDS:
        new, old = [], []
        for _ in range(reps):
            new.append(seconds([str(SCRIPT), *args]))
            old.append(seconds([sys.executable, "-c", OLD, *args]))
        n, o = statistics.median(new), statistics.median(old)
        rows.append([" ".join(args), f"{n:.3f}", f"{o:.3f}", f"{o / n:.2f}"])
    print_table(rows)


if __name__ == "__main__":
    main()
