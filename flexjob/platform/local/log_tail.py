"""The last lines of a replica's log: why a failed local replica failed, for ``describe``.

Reads at most the final few KiB of the file (logs can be large). Not a log reader for users
(``ReplicaRuntime.read_logs``).
"""

from pathlib import Path

TAIL_LINES = 8
TAIL_BYTES = 4096


def log_tail(path: Path | str, lines: int = TAIL_LINES, max_bytes: int = TAIL_BYTES) -> str:
    """The last ``lines`` non-empty lines of ``path`` ("" when it is missing or empty)."""
    try:
        with open(path, "rb") as src:
            src.seek(0, 2)
            size = src.tell()
            src.seek(max(0, size - max_bytes))
            data = src.read()
    except OSError:
        return ""
    text = data.decode(errors="replace")
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    if size > max_bytes and kept:
        kept = kept[1:]  # the first line was cut in the middle
    return "\n".join(kept[-lines:])
