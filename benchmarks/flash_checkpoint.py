"""Flash checkpoint against ``torch.save`` of the same state: time the step is blocked, and
time until the state is on disk.

This process plays the agent: a real ``FlashSaver`` (the agent's background writer). It
starts a worker process that holds a model of ``--sizes`` MB (float32 parameters in 4 MiB
tensors, SGD; ``--momentum`` adds the optimizer's buffers, doubling the state) and, per
round, in alternating order:

* flash: ``FlashCheckpoint.save(persist=True)`` — blocking: the call; to disk: until the
  agent's ``checkpoint.flash`` holds that step (written in the agent process, fsynced);
* baseline ``torch.save``: ``Checkpointer.save`` (``torch.save`` to a temp file + fsync +
  rename), blocking and to disk alike.

The first flash save allocates the shared memory and is reported on its own; the rows are
medians of the rounds after it. Prints ratios flash / torch.save (below 1: flash is faster).

With ``--device cuda`` the model lives on the GPU (the copy into shared memory is then a
device-to-host copy, inside the blocking time) and the worker also restores the last copy into
a fresh model on the device and checks it equals the trained one, bit for bit.

    PYTHONPATH=. python benchmarks/flash_checkpoint.py [--sizes 100 1000] [--rounds 5] [--momentum]
        [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.table import print_table

CHUNK = 4 * 2**20  # bytes per parameter tensor


def worker(size_mb: int, rounds: int, momentum: bool, directory: str, device: str) -> None:
    """The training process: times both ways of saving; prints one JSON line."""
    import torch

    from flexjob.trainer import flash_files
    from flexjob.trainer.checkpoint import Checkpointer
    from flexjob.trainer.flash import FlashCheckpoint

    count = max(1, size_mb * 2**20 // CHUNK)
    model = torch.nn.ParameterList(
        [torch.nn.Parameter(torch.randn(CHUNK // 4, device=device)) for _ in range(count)]
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9 if momentum else 0.0)
    for p in model:
        p.grad = torch.ones_like(p)
    opt.step()
    flash = FlashCheckpoint.for_process(Path(directory) / "flash", "bench", 0)
    baseline = Checkpointer(Path(directory) / "torch")
    stored = flash.storage_path

    def flash_once(step: int) -> tuple[float, float]:
        start = time.perf_counter()
        assert flash.save(model=model, optimizer=opt, step=step, persist=True)
        blocked = time.perf_counter() - start
        while True:
            h = flash_files.read_header(stored)
            if h is not None and h.sealed and h.step == step:
                return blocked, time.perf_counter() - start
            time.sleep(0.005)  # the agent needs the CPU more than this poll

    def torch_once(step: int) -> tuple[float, float]:
        start = time.perf_counter()
        baseline.save(model=model, optimizer=opt, step=step)
        took = time.perf_counter() - start
        return took, took

    first = flash_once(1)
    runs: dict[str, list[tuple[float, float]]] = {"flash": [], "torch.save": []}
    for r in range(rounds):
        order = [("flash", flash_once), ("torch.save", torch_once)]
        for name, fn in order if r % 2 == 0 else order[::-1]:
            runs[name].append(fn(2 + r))
    state_bytes = sum(p.numel() * 4 for p in model) * (2 if momentum else 1)
    fresh = torch.nn.ParameterList(
        [torch.nn.Parameter(torch.zeros(CHUNK // 4, device=device)) for _ in range(count)]
    )
    restored = flash.restore(model=fresh)
    pairs = zip(model, fresh, strict=True)
    same = restored is not None and all(torch.equal(a, b) for a, b in pairs)
    report = {"first": first, "runs": runs, "state_bytes": state_bytes, "restored_equal": same}
    print(json.dumps(report), flush=True)
    flash.close()


def run_size(size_mb: int, rounds: int, momentum: bool, device: str) -> dict[str, object]:
    from flexjob.agent.flash_saver import FlashSaver

    directory = tempfile.mkdtemp(prefix="flash-bench-")
    saver = FlashSaver("bench")
    env, fd = saver.worker_env(0, str(Path(directory) / "flash"))
    cmd = [sys.executable, __file__, "--worker", str(size_mb), "--rounds", str(rounds)]
    cmd += ["--dir", directory, "--device", device] + (["--momentum"] if momentum else [])
    try:
        out = subprocess.run(
            cmd,
            env={**os.environ, **env},
            pass_fds=(fd,),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        FlashSaver.started(fd)
        saver.close()
        shutil.rmtree(directory, ignore_errors=True)
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000], help="MB")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--momentum", action="store_true")
    parser.add_argument("--device", default="cpu", help="where the model lives: cpu, cuda")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.rounds, args.momentum, args.dir, args.device)
        return
    rows = [
        [
            "model",
            "state",
            "way",
            "blocking ms",
            "to disk ms",
            "blocking / torch.save",
            "to disk / torch.save",
        ]
    ]
    for size in args.sizes:
        got = run_size(size, args.rounds, args.momentum, args.device)
        if not got["restored_equal"]:
            raise SystemExit(f"{size} MB: the restored flash copy differs from the model")
        runs = got["runs"]
        assert isinstance(runs, dict)
        state = f"{int(got['state_bytes']) / 2**20:.0f} MiB"  # type: ignore[call-overload]
        med = {
            name: (
                statistics.median(b for b, _ in pairs) * 1000,
                statistics.median(d for _, d in pairs) * 1000,
            )
            for name, pairs in runs.items()
        }
        base_block, base_disk = med["torch.save"]
        first_block, first_disk = (x * 1000 for x in got["first"])  # type: ignore[attr-defined]
        for name, (block, disk) in med.items():
            rows.append(
                [
                    f"{size} MB",
                    state,
                    name,
                    f"{block:.1f}",
                    f"{disk:.1f}",
                    f"{block / base_block:.3f}",
                    f"{disk / base_disk:.3f}",
                ]
            )
        first = ["flash, first save", f"{first_block:.1f}", f"{first_disk:.1f}", "", ""]
        rows.append([f"{size} MB", state, *first])
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"medians of {args.rounds} rounds; baseline: torch.save (Checkpointer.save, fsync)")
    print(f"model on {args.device}; restored copy equal to the model: yes")
    print(f"{os.cpu_count()} CPUs, load average {load}")
    print_table(rows)


if __name__ == "__main__":
    main()
