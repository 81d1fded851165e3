"""Structured log lines: one line per event, ``event=NAME job=JOB key=value ...``."""

import logging


def event(logger: logging.Logger, name: str, job: str, **fields: object) -> None:
    parts = [f"event={name}", f"job={job}"]
    parts += [f"{k}={_fmt(v)}" for k, v in fields.items()]
    logger.info(" ".join(parts))


def _fmt(value: object) -> str:
    text = str(value)
    return repr(text) if (" " in text or not text) else text
