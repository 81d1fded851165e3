"""``TimelineRecorder``: the master writes its job's life to ``<job-dir>/timeline.jsonl``.

Events come from the master's own event stream (``master.logs.listen``); samples are taken by
the health loop every ``every_s`` seconds from a ``MasterView``. Each record is one appended
line (``observe.timeline`` reads them). Rounds and world-size changes also count into the
Prometheus metrics here, where the master first sees them. Not for the state file.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from flexjob.master import logs
from flexjob.master.observing import MasterView
from flexjob.observe import metrics, timeline

log = logging.getLogger(__name__)

ROUNDS = metrics.counter(
    "flexjob_master_rendezvous_rounds", "Rendezvous rounds completed.", ["job_name"]
)
NODE_FAILURES = metrics.counter(
    "flexjob_master_node_failures", "Nodes lost or failed.", ["job_name", "kind"]
)


class TimelineRecorder:
    def __init__(
        self,
        job: str,
        job_dir: str | None,
        *,
        every_s: float = 2.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._job = job
        self._path = Path(job_dir) / timeline.FILE_NAME if job_dir else None
        self._every_s = every_s
        self._clock = clock
        self._last_sample = 0.0
        self._lock = threading.Lock()
        self._undo = logs.listen(job, self._on_event)

    def _write(self, record: dict[str, object]) -> None:
        if self._path is None:
            return
        line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
        with self._lock:
            try:
                with self._path.open("a") as f:
                    f.write(line)
            except OSError as exc:
                log.debug("timeline not written: %s", exc)

    def _on_event(self, name: str, fields: dict[str, object]) -> None:
        if name == timeline.ROUND:
            ROUNDS.labels(self._job).inc()
        elif name in (timeline.LOST, timeline.FAILED):
            NODE_FAILURES.labels(self._job, name).inc()
        if name in timeline.EVENT_NAMES:
            self._write(
                timeline.event_record(timeline.TimelineEvent(self._clock(), name, dict(fields)))
            )

    def sample(self, view: Callable[[], MasterView], *, force: bool = False) -> None:
        """Append a sample when ``every_s`` passed since the last (health loop tick)."""
        now = self._clock()
        if not force and now - self._last_sample < self._every_s:
            return
        self._last_sample = now
        v = view()
        s = timeline.TimelineSample(
            now, v.world_size, v.samples_per_second, v.step, v.shards_done, v.shards_total, v.loss
        )
        self._write(timeline.sample_record(s))

    def close(self) -> None:
        self._undo()
