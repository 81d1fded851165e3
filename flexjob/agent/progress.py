"""The one-line progress display of ``flexjob run``: world size, step, samples/s, epoch %.

Reads the master (``GetProgress`` and the step the trainer publishes in the KV store). Before
the first data it says what the job waits for (nodes to join, the trainers to start, the first
step). On a terminal it is a live line that the output of the ranks (``emit``) scrolls above;
otherwise a plain line every ``plain_every_s`` on stderr. ``close(final=True)`` removes the
line and prints the summary last. Not a metrics exporter.
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


def waiting_text(joined: int | None, min_nodes: int) -> str:
    """What a job without data yet waits for: its nodes (``joined`` of ``min_nodes``; None:
    the master does not answer yet), then its trainers."""
    if joined is None:
        return "starting: waiting for the master to serve"
    if joined < min_nodes:
        return f"starting: {joined}/{min_nodes} node(s) joined; waiting for the others"
    return (
        f"starting: {joined} node(s) joined; waiting for the trainers (importing torch, "
        "forming the world, registering their dataset)"
    )


def progress_text(p: Progress, step: str, rate: float) -> str:
    """The live line for progress ``p``, rank 0's ``step`` and ``rate`` samples/s."""
    if p.samples_done == 0 and step == "?":
        return f"world {p.world_size} | waiting for the first step (rank 0's first batch)"
    per_epoch = p.samples_total / p.epochs if p.epochs else 0
    done_in_epoch = p.samples_done - per_epoch * max(p.epoch, 0)
    pct = 100.0 * done_in_epoch / per_epoch if per_epoch else 0.0
    pct = min(max(pct, 0.0), 100.0)
    return (
        f"world {p.world_size} | step {step} | {rate:,.0f} samples/s | "
        f"epoch {min(p.epoch + 1, p.epochs)}/{p.epochs} {pct:.0f}% | "
        f"{100.0 * p.samples_done / max(p.samples_total, 1):.0f}% of job"
    )


def summary_text(p: Progress, step: str) -> str:
    """The last line of a finished job: what was done, with rank 0's own step count."""
    steps = "" if step == "?" else f"{step} steps, "
    return (
        f"flexjob: job done: {steps}{p.samples_done}/{p.samples_total} samples in "
        f"{p.shards_done}/{p.shards_total} shards over {p.epochs} epoch(s), "
        f"last world: {p.world_size} node(s)"
    )


class ProgressLine:
    def __init__(
        self,
        master: str,
        *,
        enabled: bool = True,
        dataset: str = DEFAULT_DATASET,
        plain_every_s: float = 5.0,
        interval_s: float = 0.5,
        min_nodes: int = 1,
    ) -> None:
        self._client = MasterClient(master, "flexjob-run", timeout=2.0, retry_deadline=2.0)
        self._dataset = dataset
        self._enabled = enabled
        self._min_nodes = min_nodes
        self._console = Console(stderr=True)
        self._live: Live | None = None
        if enabled and self._console.is_terminal:
            # transient: the line is gone once stopped, so the summary is what stays last.
            # The ranks' output, piped through this process (``emit``), prints above it.
            self._live = Live(Text(""), console=self._console, transient=True, redirect_stdout=True)
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

    @property
    def live(self) -> bool:
        """True while the line is drawn live on a terminal (the ranks' output then goes
        through ``emit``)."""
        return self._live is not None

    def emit(self, line: str, err: bool = False) -> None:
        """Print a line of a rank's output above the live line (never glued onto it)."""
        stream = sys.stderr if err or self._live is None else sys.stdout
        if self._live is not None and not self._closed:
            self._live.console.print(line.rstrip("\n"), markup=False, highlight=False)
        else:
            stream.write(line)
            stream.flush()

    def _step(self) -> str:
        with contextlib.suppress(FlexjobError):
            return (self._client.kv_get(names.KV_STEP) or b"?").decode()
        return "?"

    def _joined(self) -> int | None:
        with contextlib.suppress(FlexjobError):
            return len(self._client.running_nodes())
        return None

    def render(self, p: Progress) -> str:
        return progress_text(p, self._step(), self._rate)

    def _show(self, line: str, now: float) -> None:
        if self._live is not None:
            self._live.update(Text(line))
        elif now - self._last_plain >= self._plain_every_s:
            self._last_plain = now
            print(line, file=sys.stderr, flush=True)

    def update(self) -> None:
        now = time.monotonic()
        if not self._enabled or now - self._last_poll < self._interval_s:
            return
        self._last_poll = now
        p = self._poll()
        if p is None:
            if self._last is None:
                self._show(waiting_text(self._joined(), self._min_nodes), now)
            return
        self._last = p
        if self._rate_base is not None and now > self._rate_base[0]:
            t0, n0 = self._rate_base
            if now - t0 >= 1.0:
                self._rate = (p.samples_done - n0) / (now - t0)
                self._rate_base = (now, p.samples_done)
        else:
            self._rate_base = (now, p.samples_done)
        self._show(self.render(p), now)

    def finished(self) -> bool:
        p = self._poll() or self._last
        if p is not None:
            self._last = p
        return p is not None and p.finished

    def close(self, final: bool = False) -> None:
        """Remove the live line; with ``final``, then print the summary (the last line)."""
        if self._closed:
            return
        self._closed = True
        if self._live is not None:
            self._live.stop()
        if final and self._last is not None:
            print(summary_text(self._last, self._step()), file=sys.stderr, flush=True)
        self._client.close()
