"""The long chaos run: many random faults on real jobs, every sample checked; prints one table.

Runs the chaos training script (``tests/chaos/chaos_train.py``, digits, 2 nodes, 3 epochs)
first once without faults (the baseline: its accuracy), then job after job under
``flexjob run`` and ``flexjob submit`` alternately, each with ``--per-job`` faults drawn at
random (SIGKILL of a trainer, an agent or the master; SIGSTOP of a trainer; under ``submit``
also SIGKILL of the local operator, which is then restarted with ``flexjob operator
--platform local``) and injected at random points of its progress, each once the job recovered
from the one before, until ``--faults`` faults were injected. ``--parallel N`` runs N jobs at
a time. Per job it checks the exit code, every (epoch, index) trained exactly once, the
accuracy against the baseline, and orphaned processes.

    PYTHONPATH=. python benchmarks/chaos.py --faults 100        # ~1 h on a quiet 2-core box
    PYTHONPATH=. python benchmarks/chaos.py --faults 30 --seed 7 --parallel 2
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.chaos.harness import (
    MODE_FAULTS,
    ChaosJob,
    Fault,
    SampleCheck,
    check_samples,
    run_faults,
    start_run,
    start_submit,
    wait_no_orphans,
)

#: "acc ok": jobs whose final accuracy is at least 99% of the fault-free run's.


@dataclass
class Tally:
    jobs: int = 0
    finished: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    lost: int = 0
    duplicated: int = 0
    orphans: int = 0
    worst_accuracy: float = 1.0
    accurate: int = 0  # jobs whose accuracy is within 1% of the baseline's
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def one_job(
    mode: str,
    workdir: Path,
    faults: list[Fault],
    rng: random.Random,
    tally: Tally,
    baseline_accuracy: float | None = None,
) -> int:
    """Run one job under ``faults``; returns how many were injected."""
    started = time.monotonic()
    job: ChaosJob = start_run(workdir) if mode == "run" else start_submit(workdir)
    code: int | None = None
    try:
        try:
            run_faults(job, faults, rng)
            code = job.wait(600)
        except Exception as exc:  # a job that hung or lost a process: counted, not fatal
            with tally.lock:
                tally.failures.append(f"{mode} {workdir.name}: {str(exc).splitlines()[0]}")
        check = check_samples(job.log_dir, job.epochs)
        left = wait_no_orphans(job.log_dir)
        accuracy = job.accuracy()
        with tally.lock:
            _record(tally, mode, workdir, job, code, check, len(left), accuracy, baseline_accuracy)
        return len(job.faults)
    finally:
        job.stop()
        with tally.lock:
            tally.seconds += time.monotonic() - started


def _record(
    tally: Tally,
    mode: str,
    workdir: Path,
    job: ChaosJob,
    code: int | None,
    check: SampleCheck,
    orphans: int,
    accuracy: float | None,
    baseline_accuracy: float | None,
) -> None:
    tally.jobs += 1
    tally.finished += code == 0
    tally.faults.update(f.split()[0] for f in job.faults)
    tally.lost += check.lost
    tally.duplicated += check.duplicated
    tally.orphans += orphans
    tally.worst_accuracy = min(tally.worst_accuracy, accuracy or 0.0)
    base = accuracy if baseline_accuracy is None else baseline_accuracy
    tally.accurate += accuracy is not None and base is not None and accuracy >= 0.99 * base
    if code != 0 or check.lost or check.duplicated or orphans:
        tally.failures.append(
            f"{mode} {workdir.name}: rc={code} lost={check.lost} "
            f"duplicated={check.duplicated} orphans={orphans} faults={job.faults}"
        )
    print(
        f"  {mode:6} {workdir.name}: rc={code} {check} acc={accuracy} "
        f"orphans={orphans} faults={job.faults}",
        file=sys.stderr,
        flush=True,
    )


class Plan:
    """Hands out the next job (its mode, faults and seed) while faults are left to inject;
    what each job injected comes back with ``done``. Shared by the ``--parallel`` threads."""

    def __init__(self, faults: int, per_job: int, modes: list[str], rng: random.Random) -> None:
        self.injected = 0
        self._total = faults
        self._per_job = per_job
        self._modes = modes
        self._rng = rng
        self._planned = 0  # faults of the jobs running now
        self._n = 0
        self._lock = threading.Lock()

    def next(self) -> tuple[int, str, list[Fault], random.Random] | None:
        with self._lock:
            left = self._total - self.injected - self._planned
            if left <= 0:
                return None
            mode = self._modes[self._n % len(self._modes)]
            k = min(self._per_job, left)
            faults = [self._rng.choice(MODE_FAULTS[mode]) for _ in range(k)]
            self._planned += k
            self._n += 1
            return self._n - 1, mode, faults, random.Random(self._rng.randrange(1 << 30))

    def done(self, planned: int, injected: int) -> None:
        with self._lock:
            self._planned -= planned
            self.injected += max(1, injected)  # a job that took none still counts: no endless loop


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--faults", type=int, default=100, help="Faults to inject in all.")
    p.add_argument("--per-job", type=int, default=4, help="Faults per job.")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--modes", default="run,submit", help="Comma-separated: run, submit.")
    p.add_argument("--parallel", type=int, default=1, help="Jobs running at the same time.")
    a = p.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    modes = [m for m in a.modes.split(",") if m]
    root = Path(tempfile.mkdtemp(prefix="flexjob-chaos-"))
    print(f"chaos: seed {seed}, work in {root}", file=sys.stderr, flush=True)

    baseline = Tally()
    one_job("run", root / "baseline", [], rng, baseline)
    base_acc = baseline.worst_accuracy
    tallies = {m: Tally() for m in modes}
    plan = Plan(a.faults, a.per_job, modes, rng)

    def worker() -> None:
        while (job := plan.next()) is not None:
            n, mode, faults, job_rng = job
            injected = 0
            try:
                workdir = root / f"{mode}-{n:03d}"
                injected = one_job(mode, workdir, faults, job_rng, tallies[mode], base_acc)
            finally:
                plan.done(len(faults), injected)

    threads = [threading.Thread(target=worker, name=f"chaos-{i}") for i in range(a.parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    injected = plan.injected

    print(f"\nchaos: {injected} faults, seed {seed}; baseline = the fault-free run")
    head = (
        f"{'workload':<10} {'jobs':>5} {'finished':>8} {'faults':>6} {'kinds':<56} {'lost':>5} "
        f"{'dup':>5} {'orphans':>7} {'acc ok':>6} {'worst acc':>9} {'baseline acc':>12} "
        f"{'ratio':>6}"
    )
    print(head)
    print("-" * len(head))
    rows = [("baseline", baseline), *tallies.items()]
    for name, t in rows:
        kinds = " ".join(f"{k}={v}" for k, v in sorted(t.faults.items())) or "-"
        ratio = t.worst_accuracy / base_acc if base_acc else 0.0
        print(
            f"{name:<10} {t.jobs:>5} {t.finished:>8} {sum(t.faults.values()):>6} {kinds:<56} "
            f"{t.lost:>5} {t.duplicated:>5} {t.orphans:>7} {t.accurate:>6} "
            f"{t.worst_accuracy:>9.4f} {base_acc:>12.4f} {ratio:>6.3f}"
        )
    failures = [f for t in tallies.values() for f in t.failures] + baseline.failures
    for f in failures:
        print(f"FAILED {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
