"""Where a worker's stdout and stderr go: the agent's console with a ``[node/rankN]:`` prefix,
and/or files under ``--log-dir``, as torchrun's ``--redirects`` / ``--tee`` say.

The agent reads each worker's pipes line by line on two small threads, keeps the last lines
of stderr (the root cause of a failure) and writes each line where it belongs. Not for the
agent's own logging.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntFlag
from pathlib import Path
from typing import IO

#: Lines of a worker's stderr kept for the failure summary.
TAIL_LINES = 10

_console_lock = threading.Lock()


class Std(IntFlag):
    """torchrun's stream selector: 0 none, 1 stdout, 2 stderr, 3 both."""

    NONE = 0
    OUT = 1
    ERR = 2
    ALL = 3


def parse_std(text: str, option: str) -> dict[int, Std] | Std:
    """``"3"`` → Std.ALL for every local rank; ``"0:1,1:2"`` → per local rank. Errors name
    ``option`` and the allowed values."""
    allowed = f"{option} must be 0-3 (0 none, 1 stdout, 2 stderr, 3 both) or LOCAL_RANK:0-3,..."

    def one(value: str) -> Std:
        if not value.strip().isdigit() or not 0 <= int(value) <= 3:
            raise ValueError(f"{allowed}; got {text!r}")
        return Std(int(value))

    if ":" not in text:
        return one(text)
    out: dict[int, Std] = {}
    for item in text.split(","):
        rank, _, value = item.partition(":")
        if not rank.strip().isdigit():
            raise ValueError(f"{allowed}; got {text!r}")
        out[int(rank)] = one(value)
    return out


def std_for(spec: dict[int, Std] | Std, local_rank: int) -> Std:
    return spec if isinstance(spec, Std) else spec.get(local_rank, Std.NONE)


@dataclass(frozen=True, slots=True)
class OutputConfig:
    """``log_dir``: where per-rank files go (``DIR/<node>/<local_rank>/stdout.log``,
    ``stderr.log``); ``redirects``: streams sent only to files; ``tee``: streams sent to files
    as well as the console; ``prefix``: mark console lines with the node and rank."""

    log_dir: str = ""
    redirects: str = "0"
    tee: str = "0"
    prefix: bool = True

    def __post_init__(self) -> None:
        for option, value in (("--redirects", self.redirects), ("--tee", self.tee)):
            spec = parse_std(value, option)
            used = spec if isinstance(spec, Std) else Std(max(spec.values(), default=0))
            if used and not self.log_dir:
                raise ValueError(f"{option} {value} needs --log-dir (where the files go)")

    def streams(self, local_rank: int) -> tuple[Std, Std]:
        """(streams shown on the console, streams written to files) of one local rank."""
        redirected = std_for(parse_std(self.redirects, "--redirects"), local_rank)
        teed = std_for(parse_std(self.tee, "--tee"), local_rank)
        return Std(Std.ALL & ~redirected) | teed, redirected | teed


class WorkerOutput:
    """Pumps one worker's stdout and stderr; ``tail()`` is the last lines of its stderr."""

    def __init__(
        self,
        config: OutputConfig,
        node_id: str,
        local_rank: int,
        label: Callable[[], str],
        on_end: Callable[[], None] | None = None,
    ) -> None:
        """``on_end``: called (on a pump thread) once the process's stderr closed."""
        self._on_end = on_end
        self._config = config
        self._label = label
        self._console, self._files = config.streams(local_rank)
        self._dir = Path(config.log_dir) / node_id / str(local_rank) if config.log_dir else None
        self._tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._threads: list[threading.Thread] = []
        #: Wall-clock time its stderr closed: when the process ended, to the millisecond.
        self.ended_at: float | None = None

    def start(self, stdout: IO[bytes] | None, stderr: IO[bytes] | None) -> None:
        for which, pipe, console in (
            (Std.OUT, stdout, sys.stdout),
            (Std.ERR, stderr, sys.stderr),
        ):
            if pipe is None:
                continue
            t = threading.Thread(
                target=self._pump, args=(which, pipe, console), daemon=True, name="worker-output"
            )
            t.start()
            self._threads.append(t)

    def _open(self, which: Std) -> IO[bytes] | None:
        if self._dir is None or not which & self._files:
            return None
        self._dir.mkdir(parents=True, exist_ok=True)
        name = "stdout.log" if which is Std.OUT else "stderr.log"
        return open(self._dir / name, "ab")  # closed by _pump

    def _pump(self, which: Std, pipe: IO[bytes], console: IO[str]) -> None:
        to_console = bool(which & self._console)
        with contextlib.ExitStack() as stack:
            stack.callback(pipe.close)
            file = self._open(which)
            if file is not None:
                stack.enter_context(file)
            for line in iter(pipe.readline, b""):
                if which is Std.ERR:
                    self._tail.append(line.decode(errors="replace").rstrip())
                if file is not None:
                    file.write(line)
                    file.flush()
                if to_console:
                    self._write(console, line)
        if which is Std.ERR:
            self.ended_at = time.time()
            if self._on_end is not None:
                self._on_end()

    def _write(self, console: IO[str], line: bytes) -> None:
        text = line.decode(errors="replace")
        if not text.endswith("\n"):
            text += "\n"
        if self._config.prefix:
            text = f"{self._label()}: {text}"
        with _console_lock, contextlib.suppress(OSError, ValueError):
            console.write(text)
            console.flush()

    def join(self, timeout: float = 2.0) -> None:
        """Wait for the pipes to drain (the process has exited)."""
        for t in self._threads:
            t.join(timeout)

    def tail(self) -> list[str]:
        return [line for line in self._tail if line]
