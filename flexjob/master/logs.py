"""Structured log lines: one line per event, ``event=NAME job=JOB key=value ...``.

Whoever wants a job's events as data (the timeline) adds a listener for that job with
``listen``; every ``event`` call reaches it after the log line is written.
"""

import logging
import threading
from collections.abc import Callable

Listener = Callable[[str, dict[str, object]], None]

_listeners: dict[str, list[Listener]] = {}
_lock = threading.Lock()


def event(logger: logging.Logger, name: str, job: str, **fields: object) -> None:
    parts = [f"event={name}", f"job={_fmt(job)}"]
    parts += [f"{k}={_fmt(v)}" for k, v in fields.items()]
    logger.info(" ".join(parts))
    for listener in _listeners.get(job, ()):
        try:
            listener(name, fields)
        except Exception:  # a listener never breaks the master
            logger.exception("event listener failed for %s", name)


def listen(job: str, listener: Listener) -> Callable[[], None]:
    """Call ``listener(name, fields)`` on every event of ``job``; returns the undo."""
    with _lock:
        _listeners[job] = [*_listeners.get(job, ()), listener]

    def undo() -> None:
        with _lock:
            rest = [x for x in _listeners.get(job, ()) if x is not listener]
            if rest:
                _listeners[job] = rest
            else:
                _listeners.pop(job, None)

    return undo


def _fmt(value: object) -> str:
    """A value as one token: quoted when it is empty or holds a space or anything unprintable
    (a client's node id cannot add fields or lines)."""
    text = str(value)
    return text if text and text.isprintable() and " " not in text else repr(text)
