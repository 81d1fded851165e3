"""Read what a user's image viewer reads first: a PNG's signature and size."""

import struct
from pathlib import Path

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the IHDR chunk; AssertionError when ``path`` is not a PNG."""
    head = path.read_bytes()[:24]
    assert head[:8] == SIGNATURE and head[12:16] == b"IHDR", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)
