"""Fixed global batch fidelity: final training loss of the digits example at a fixed world of
two nodes (baseline) and in an elastic run that loses a worker at 25% and gains a third node at
45%, both with ``spec.batch`` = 240 samples (micro-batches of 16) and the same seed.

Run: ``.venv/bin/python benchmarks/batch_fidelity.py`` (from the repository root). Prints a
table with the elastic run's final loss as a ratio of the baseline's; the test
``tests/e2e/test_batch_fidelity.py`` bounds the difference at 1%.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.fidelity import GLOBAL_BATCH, MICRO_BATCH, elastic_run, fixed_world_run


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="flexjob-fidelity-") as tmp:
        started = time.monotonic()
        fixed = fixed_world_run(Path(tmp) / "fixed")
        fixed_s = time.monotonic() - started
        started = time.monotonic()
        elastic = elastic_run(Path(tmp) / "elastic")
        elastic_s = time.monotonic() - started
    print(f"global batch {GLOBAL_BATCH} (micro-batches of {MICRO_BATCH}), digits, 6 epochs")
    print(f"{'run':<34} {'final loss':>11} {'ratio':>7} {'wall s':>7}")
    print(f"{'fixed world of 2 (baseline)':<34} {fixed.loss:>11.6f} {1.0:>7.4f} {fixed_s:>7.1f}")
    ratio = elastic.loss / fixed.loss
    print(f"{'elastic 2 -> kill -> 3':<34} {elastic.loss:>11.6f} {ratio:>7.4f} {elastic_s:>7.1f}")


if __name__ == "__main__":
    main()
