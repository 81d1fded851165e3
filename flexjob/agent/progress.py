"""The one-line progress display of ``flexjob run``: world size, step, samples/s, epoch %.

Reads the master (``GetProgress`` and the step the trainer publishes in the KV store). On a
terminal it is a live line; otherwise a plain line every ``plain_every_s`` on stderr. Not a
metrics exporter.
"""

from __future__ import annotations

import contextlib
import sys
import time

from rich.console import Console
from rich.live import Live
from rich.text import Text

from flexjob.api import names
from flexjob.api.errors import FlexjobError
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import DEFAULT_DATASET, Progress


class ProgressLine:
    def __init__(
        self,
        master: str,
        *,
        enabled: bool = True,
        dataset: str = DEFAULT_DATASET,
        plain_every_s: float = 5.0,
        interval_s: float = 0.5,
    ) -> None:
        self._client = MasterClient(master, "flexjob-run", timeout=2.0, retry_deadline=2.0)
        self._dataset = dataset
        self._enabled = enabled
        self._console = Console(stderr=True)
        self._live: Live | None = None
        if enabled and self._console.is_terminal:
            self._live = Live(Text(""), console=self._console, transient=False)
            self._live.start()
        self._plain_every_s = plain_every_s
        self._interval_s = interval_s
        self._last_poll = 0.0
        self._last_plain = time.monotonic()
        self._last: Progress | None = None
        self._rate_base: tuple[float, int] | None = None
        self._rate = 0.0
        self._closed = False

    def _poll(self) -> Progress | None:
        try:
            return self._client.get_progress(self._dataset)
        except FlexjobError:
            return None  # no dataset registered yet, or the master is gone

    def render(self, p: Progress) -> str:
        step = b"?"
        with contextlib.suppress(FlexjobError):
            step = self._client.kv_get(names.KV_STEP) or b"?"
        per_epoch = p.samples_total / p.epochs if p.epochs else 0
        done_in_epoch = p.samples_done - per_epoch * max(p.epoch, 0)
        pct = 100.0 * done_in_epoch / per_epoch if per_epoch else 0.0
        pct = min(max(pct, 0.0), 100.0)
        return (
            f"world {p.world_size} | step {step.decode()} | {self._rate:,.0f} samples/s | "
            f"epoch {min(p.epoch + 1, p.epochs)}/{p.epochs} {pct:.0f}% | "
            f"{100.0 * p.samples_done / max(p.samples_total, 1):.0f}% of job"
        )

    def update(self) -> None:
        now = time.monotonic()
        if not self._enabled or now - self._last_poll < self._interval_s:
            return
        self._last_poll = now
        p = self._poll()
        if p is None:
            return
        self._last = p
        if self._rate_base is not None and now > self._rate_base[0]:
            t0, n0 = self._rate_base
            if now - t0 >= 1.0:
                self._rate = (p.samples_done - n0) / (now - t0)
                self._rate_base = (now, p.samples_done)
        else:
            self._rate_base = (now, p.samples_done)
        line = self.render(p)
        if self._live is not None:
            self._live.update(Text(line))
        elif now - self._last_plain >= self._plain_every_s:
            self._last_plain = now
            print(line, file=sys.stderr, flush=True)

    def finished(self) -> bool:
        p = self._poll() or self._last
        if p is not None:
            self._last = p
        return p is not None and p.finished

    def close(self, final: bool = False) -> None:
        if self._closed:
            return
        if final and self._last is not None:
            p = self._last
            print(
                f"flexjob: job done: {p.samples_done}/{p.samples_total} samples in "
                f"{p.shards_done}/{p.shards_total} shards over {p.epochs} epoch(s), "
                f"last world: {p.world_size} node(s)",
                file=sys.stderr,
                flush=True,
            )
        self._closed = True
        if self._live is not None:
            self._live.stop()
        self._client.close()
