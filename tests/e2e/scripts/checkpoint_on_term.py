"""A trainer that saves a checkpoint when told to stop: on SIGTERM it writes
$CKPT_DIR/rank<R>.ckpt and exits 0. It says it is running with $CKPT_DIR/rank<R>.ready."""

import os
import signal
import sys
import time
from pathlib import Path

out = Path(os.environ["CKPT_DIR"])
rank = os.environ.get("RANK", "x")


def save_and_exit(signum: int, frame: object) -> None:
    time.sleep(0.5)  # a checkpoint takes a moment
    (out / f"rank{rank}.ckpt").write_text(str(os.getpid()))
    sys.exit(0)


signal.signal(signal.SIGTERM, save_and_exit)
(out / f"rank{rank}.ready").write_text(str(os.getpid()))
time.sleep(120)
