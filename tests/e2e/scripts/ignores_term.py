"""A trainer that ignores SIGTERM (stuck in a collective, or a handler that never returns):
only SIGKILL ends it. It says it is running with $CKPT_DIR/rank<R>.ready."""

import os
import signal
import time
from pathlib import Path

signal.signal(signal.SIGTERM, signal.SIG_IGN)
rank = os.environ.get("RANK", "x")
ready = Path(os.environ["CKPT_DIR"]) / f"rank{rank}.ready"
ready.with_suffix(".tmp").write_text(str(os.getpid()))
ready.with_suffix(".tmp").rename(ready)  # whole: the test reads the pid
time.sleep(120)
