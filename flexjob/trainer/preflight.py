"""The pre-flight check a new world runs before it trains (``$FLEXJOB_PREFLIGHT=1``,
``flexjob run --preflight``).

Every rank times ``local_check`` (a fixed amount of matrix products, whose result must be
finite; the fastest of ``REPEATS`` runs, in the thread's CPU time on one torch thread, so
waiting for a busy CPU or for the GIL is not taken for a slow node), all-reduces a small
tensor (which must sum to the world size: the collective path works), and the ranks all-gather
their ``CheckResult``s, so every rank reaches the same verdict
(``core.training.preflight.failed_nodes``:
a rank's check raised, or a node far slower than the others).
The failed nodes are reported to the master, which keeps them out; the ranks then re-form
without them (``ElasticTrainer``). Not run for a world of one node (nothing to compare).
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from flexjob.core.training.preflight import CheckResult, failed_nodes
from flexjob.trainer.device import collective_device
from flexjob.trainer.settings import TrainerSettings, current_or

#: The check's size: products of SIZE x SIZE matrices, ROUNDS of them.
SIZE = 128
ROUNDS = 40
#: Runs of the check per rank; the fastest counts.
REPEATS = 5
#: Elements of the all-reduced tensor (4 KiB of float32).
REDUCE_ELEMENTS = 1024


def enabled(settings: TrainerSettings | None = None) -> bool:
    """Whether the job asked for the check (``$FLEXJOB_PREFLIGHT`` is ``1``)."""
    return current_or(settings).preflight


def local_check() -> None:
    """A fixed amount of compute; raises when the result is wrong (not finite)."""
    gen = torch.Generator().manual_seed(0)
    a = torch.rand(SIZE, SIZE, generator=gen)
    b = torch.rand(SIZE, SIZE, generator=gen)
    for _ in range(ROUNDS):
        b = (a @ b) / SIZE
    if not bool(torch.isfinite(b).all()):
        raise RuntimeError("the check's matrix products are not finite")


def run_local(node: str) -> CheckResult:
    """This rank's result: the fastest of ``REPEATS`` checks, or the error of the first that
    raised. Timed in this thread's CPU time, on one torch thread: waiting (for the CPU, for
    the GIL while the process still imports) is not slowness of the node."""
    best = float("inf")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for _ in range(REPEATS):
            started = time.thread_time()
            try:
                local_check()
            except Exception as exc:
                return CheckResult(node, 0.0, f"{type(exc).__name__}: {exc}"[:200])
            best = min(best, time.thread_time() - started)
    finally:
        torch.set_num_threads(threads)
    return CheckResult(node, best)


def preflight(node: str) -> dict[str, str]:
    """Run the check on this rank and learn every rank's: node → why, for the nodes that
    failed (the same on every rank). A collective that fails raises (the world re-forms)."""
    mine = run_local(node)
    size = dist.get_world_size()
    ones = torch.ones(REDUCE_ELEMENTS, device=collective_device())
    dist.all_reduce(ones)
    if not bool(torch.all(ones == size)):
        mine = CheckResult(node, mine.seconds, mine.error or "the all-reduce summed wrong")
    results: list[CheckResult | None] = [None] * size
    dist.all_gather_object(results, mine)
    return failed_nodes(r for r in results if r is not None)
