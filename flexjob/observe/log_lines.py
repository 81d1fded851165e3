"""One log record, one line: identifiers a client chose (node ids, dataset and key names) can
not forge log lines.

A node id with a newline in it used to write a whole fake line into ``master.log`` (a forged
``event=dataset_finished``); ``OneLineFormatter`` escapes every control character of a record's
message (``\\n`` becomes the two characters ``\\`` ``n``), so each record stays one line and
what a client sent reads as what it was. Tracebacks the formatter appends stay as they are
(they are the process's own). Not for what is logged (``master.logs``).
"""

import logging


def one_line(text: str) -> str:
    """``text`` with each unprintable character (newline, carriage return, escape, ...)
    written as its Python escape; printable text unchanged."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class OneLineFormatter(logging.Formatter):
    """A ``logging.Formatter`` whose messages are ``one_line``."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = one_line(record.message)
        return super().formatMessage(record)


def configure(level: int | str, fmt: str) -> None:
    """``logging.basicConfig(level, fmt)`` with a ``OneLineFormatter`` on its handler."""
    handler = logging.StreamHandler()
    handler.setFormatter(OneLineFormatter(fmt))
    logging.basicConfig(level=level, handlers=[handler])
