"""What one GPU can show of flexjob's GPU path, in one script (under 10 minutes on one GPU).

Checks, each a row of one table (a check that fails makes the exit code 1):

* placement: local rank 0 in a fresh process with ``CUDA_VISIBLE_DEVICES`` as given lands on
  ``cuda:0`` with nccl (``trainer.device``), and a tensor made there is on it;
* re-form: an NCCL world of one formed, all-reduced, aborted (``NcclBreaker``) and formed
  again ``--reforms`` times in the same process through ``trainer.group``; medians of form,
  first all-reduce (NCCL builds its communicator there) and abort, against the first (cold)
  form as the baseline;
* metrics: NVML (``agent.gpu``) sees the memory this process holds on the GPU;
* flash: flash-checkpoint blocking time of a ``--sizes`` MB model in GPU memory against
  ``torch.save`` of the same state (``benchmarks/flash_checkpoint.py``), and the restored copy
  equal to the model bit for bit.

Without a GPU it runs the same checks degraded and says "no GPU": the world on gloo and the
CPU, the model in host memory, NVML absent; that is how the script itself is checked on a
machine without one. A real NCCL re-form between survivors needs two GPUs: docs/gpu.md.

    PYTHONPATH=. python benchmarks/gpu_check.py [--reforms 10] [--sizes 100 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from benchmarks.table import print_table

ROOT = Path(__file__).resolve().parents[1]
PLACEMENT = """
import json, torch
from flexjob.trainer import device
dev = device.rank_device(0)
t = torch.ones(1, device=dev)
print(json.dumps({"device": str(dev), "backend": device.backend_of(dev), "tensor": str(t.device)}))
"""


def placement(gpu: bool) -> tuple[list[str], bool]:
    env = {**os.environ, "LOCAL_RANK": "0", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", PLACEMENT], env=env, capture_output=True, text=True, timeout=120
    )
    if out.returncode != 0:
        return ["placement", "failed", out.stderr.strip()[-120:], "", ""], False
    got = json.loads(out.stdout.strip().splitlines()[-1])
    want = ("cuda:0", "nccl", "cuda:0") if gpu else ("cpu", "gloo", "cpu")
    ok = (got["device"], got["backend"], got["tensor"]) == want
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "(unset)")
    what = f"rank 0 -> {got['device']} {got['backend']}, CUDA_VISIBLE_DEVICES={visible}"
    return ["placement", "ok" if ok else "WRONG", what, "", ""], ok


def reform(gpu: bool, times: int) -> tuple[list[list[str]], bool]:
    import torch.distributed as dist
    from torch.distributed import TCPStore  # type: ignore[attr-defined]

    from flexjob.trainer import group
    from flexjob.trainer.world import Generation

    backend = "nccl" if gpu else "gloo"
    dev = torch.device("cuda", 0) if gpu else torch.device("cpu")
    if gpu:
        torch.cuda.set_device(dev)
    store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    stores = group.StoreCache(60.0)
    form_s, reduce_s, abort_s = [], [], []
    ok = True
    for r in range(1, times + 2):  # the first is the cold one
        gen = Generation(r, 0, 1, f"127.0.0.1:{store.port}", f"check/round-{r}/")
        t0 = time.perf_counter()
        group.form_group(gen, 0, 1, stores, 60.0, backend=backend)
        t1 = time.perf_counter()
        x = torch.full((1024,), float(r), device=dev)
        dist.all_reduce(x)
        ok = ok and bool(torch.all(x == r))
        if gpu:
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        group.abort_group()
        if (
            dist.is_initialized()
        ):  # gloo: the group's sockets are shut; destroy it as the trainer does
            group.destroy_group()
        t3 = time.perf_counter()
        form_s.append(t1 - t0)
        reduce_s.append(t2 - t1)
        abort_s.append(t3 - t2)
    cold = (form_s[0] + reduce_s[0]) * 1000
    warm = [(f + r) * 1000 for f, r in zip(form_s[1:], reduce_s[1:], strict=True)]
    med = statistics.median
    name = f"re-form ({backend}, world of 1, x{times})"
    rows = [
        [name, "ok" if ok else "WRONG SUM", f"form {med(form_s[1:]) * 1000:.1f} ms", "", ""],
        [name, "", f"first all-reduce {med(reduce_s[1:]) * 1000:.1f} ms", "", ""],
        [name, "", f"abort {med(abort_s[1:]) * 1000:.1f} ms", "", ""],
        [name, "", f"form + first all-reduce {med(warm):.1f} ms", f"{cold:.1f} ms (cold)",
         f"{med(warm) / cold:.2f}"],
    ]  # fmt: skip
    return rows, ok


def metrics(gpu: bool) -> tuple[list[str], bool]:
    from flexjob.agent.gpu import GpuSampler

    sampler = GpuSampler()
    if not sampler.available:
        # Allowed: nothing requires NVML (the agent then reports 0).
        return [
            "metrics (NVML)",
            "absent",
            "no pynvml or no driver: GPU numbers are 0",
            "",
            "",
        ], True
    held = torch.empty(256 << 20, dtype=torch.uint8, device="cuda" if gpu else "cpu")
    if gpu:
        torch.cuda.synchronize()
    s = sampler.sample({os.getpid()})
    del held
    ok = not gpu or s.memory_bytes >= 256 << 20
    what = f"{s.memory_bytes / 2**20:.0f} MiB held on {s.devices} GPU(s), {s.percent:.0f} % busy"
    return ["metrics (NVML)", "ok" if ok else "WRONG", what, ">= 256 MiB", ""], ok


def flash(gpu: bool, sizes: list[int], rounds: int) -> tuple[list[list[str]], bool]:
    from benchmarks.flash_checkpoint import run_size

    rows, ok = [], True
    where = "cuda" if gpu else "cpu"
    for size in sizes:
        got = run_size(size, rounds, False, where)
        runs = got["runs"]
        assert isinstance(runs, dict)
        block = {k: statistics.median(b for b, _ in v) * 1000 for k, v in runs.items()}
        same = bool(got["restored_equal"])
        ok = ok and same
        rows.append(
            [
                f"flash {size} MB from {where} memory",
                "bit-exact" if same else "DIFFERS",
                f"blocking {block['flash']:.1f} ms",
                f"torch.save {block['torch.save']:.1f} ms",
                f"{block['flash'] / block['torch.save']:.3f}",
            ]
        )
    return rows, ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reforms", type=int, default=10, help="re-forms of the world of one")
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000], help="flash MB")
    ap.add_argument("--rounds", type=int, default=3, help="flash saves of each kind per size")
    args = ap.parse_args()
    gpu = torch.cuda.is_available()
    if gpu:
        name = torch.cuda.get_device_name(0)
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())  # type: ignore[no-untyped-call]
        print(f"GPU: {name} ({torch.cuda.device_count()} visible), torch {torch.__version__}, "
              f"NCCL {nccl}")  # fmt: skip
    else:
        print(f"no GPU: torch {torch.__version__} sees no CUDA device; degraded checks")
        print("(gloo on the CPU, model in host memory) that check this script, not a GPU")
    started = time.monotonic()
    rows = [["check", "result", "flexjob", "baseline", "ratio"]]
    oks = []
    row, ok = placement(gpu)
    rows.append(row)
    oks.append(ok)
    more, ok = reform(gpu, args.reforms)
    rows += more
    oks.append(ok)
    row, ok = metrics(gpu)
    rows.append(row)
    oks.append(ok)
    more, ok = flash(gpu, args.sizes, args.rounds)
    rows += more
    oks.append(ok)
    print_table(rows)
    print(f"baselines: the cold first form (re-form), torch.save with fsync (flash); "
          f"{time.monotonic() - started:.0f} s, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    if not all(oks):
        print("FAILED: a check above is not ok", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
