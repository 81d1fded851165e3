"""Prints torchrun's worker contract as this worker sees it: one JSON line per rank,
``torchrun-env: {...}``; with ``--record`` it then fails inside torch's ``@record``."""

import json
import os
import sys

import torch.distributed

KEYS = [
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
    "ROLE_NAME", "ROLE_RANK", "ROLE_WORLD_SIZE", "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_ERROR_FILE",
    "OMP_NUM_THREADS", "MASTER_ADDR", "MASTER_PORT",
]  # fmt: skip


def main() -> None:
    seen = {k: os.environ.get(k) for k in KEYS}
    seen["launched"] = str(torch.distributed.is_torchelastic_launched())
    print("torchrun-env: " + json.dumps(seen, sort_keys=True), flush=True)
    if "--record" in sys.argv and os.environ["RANK"] == "1":
        raise ValueError("bad value from rank 1")


if __name__ == "__main__":
    from torch.distributed.elastic.multiprocessing.errors import record

    record(main)()
