"""The chaos suite's logging trainer (``tests/chaos/chaos_train.py``, every sample it trains
logged) with one twist for OOM tests: once the file ``$OOM_TRIGGER`` exists, the trainer of
replica ``$OOM_REPLICA`` (``FLEXJOB_REPLICA_INDEX``) allocates memory until its container's
limit kills it. Only once per job: the first to see the trigger claims ``$OOM_TRIGGER.claimed``
(O_EXCL), so the relaunched replica trains on without allocating. It gives up at 4 GiB (no
limit enforced here) and trains on."""

import os
import runpy
import sys
import threading
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "chaos" / "chaos_train.py"
CHUNK = 32 * 2**20
MAX_BYTES = 4 * 2**30


def _claim(trigger: Path) -> bool:
    try:
        os.close(os.open(f"{trigger}.claimed", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


def _grow_when_triggered(trigger: Path) -> None:
    while not trigger.exists():
        time.sleep(0.05)
    if not _claim(trigger):
        return
    print(f"train_then_oom: allocating past the memory limit ({os.getpid()})", flush=True)
    ballast = []
    while len(ballast) * CHUNK < MAX_BYTES:
        block = bytearray(CHUNK)
        for i in range(0, CHUNK, 4096):
            block[i] = 1
        ballast.append(block)
    print("train_then_oom: no limit stopped 4 GiB", flush=True)


if os.environ.get("FLEXJOB_REPLICA_INDEX", "0") == os.environ.get("OOM_REPLICA", "1"):
    target = Path(os.environ["OOM_TRIGGER"])
    threading.Thread(target=_grow_when_triggered, args=(target,), daemon=True).start()
sys.argv[0] = str(SCRIPT)
runpy.run_path(str(SCRIPT), run_name="__main__")
