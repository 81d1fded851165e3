"""Flash checkpoints, the rules: the slot header, when a copy is complete, which copy to restore.

A flash copy is one file (a shared-memory *slot*, or the same bytes on storage): a header
page, the tensor bytes, then the pickled skeleton of the state. The header's ``seq`` and the
*seal* (``SEAL_MAGIC`` + the same ``seq``) are written last by the saver, so a copy torn by a
kill mid-write has no matching seal and is never restored. Pure code: bytes in, decisions
out; the files are read and written by ``flexjob.trainer.flash_files``.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from dataclasses import dataclass

#: Bytes before the tensor data: the header, then the seal at ``SEAL_OFFSET``.
HEADER_SIZE = 4096
MAGIC = b"FJFLASH1"
SEAL_MAGIC = b"FJSEALED"
#: magic, seq, step, data_len, meta_len, storage dir length.
_HEAD = struct.Struct("<8sQqQQH")
SEAL_OFFSET = 2048
_SEAL = struct.Struct("<8sQ")
#: Longest storage directory a header holds (UTF-8 bytes).
MAX_DIR_BYTES = SEAL_OFFSET - _HEAD.size
#: Tensor offsets in a slot are multiples of this (any dtype view of the bytes is aligned).
ALIGN = 64
#: Slots per process: one holds the last complete copy while the other is written.
SLOTS = 2


@dataclass(frozen=True, slots=True)
class SlotHeader:
    """What a flash copy says about itself: save number, training step, sizes, where its
    storage copy goes, and whether its seal matches (the copy is complete)."""

    seq: int
    step: int
    data_len: int
    meta_len: int
    storage_dir: str
    sealed: bool

    @property
    def total_len(self) -> int:
        """Bytes of the whole copy (header, tensor data, skeleton)."""
        return HEADER_SIZE + self.data_len + self.meta_len


def encode_header(seq: int, step: int, data_len: int, meta_len: int, storage_dir: str) -> bytes:
    """The header bytes (without the seal) of save ``seq`` at training step ``step``."""
    raw_dir = storage_dir.encode()
    if len(raw_dir) > MAX_DIR_BYTES:
        raise ValueError(
            f"checkpoint_dir is {len(raw_dir)} bytes long; a flash checkpoint holds at most "
            f"{MAX_DIR_BYTES}"
        )
    if seq < 1:
        raise ValueError(f"seq must be >= 1, got {seq}")
    return _HEAD.pack(MAGIC, seq, step, data_len, meta_len, len(raw_dir)) + raw_dir


def encode_seal(seq: int) -> bytes:
    """The seal of save ``seq``: written after everything else of the copy."""
    return _SEAL.pack(SEAL_MAGIC, seq)


#: What the saver writes at ``SEAL_OFFSET`` before it starts a copy (no seal matches it).
UNSEALED = _SEAL.pack(b"\0" * 8, 0)


def decode_header(page: bytes) -> SlotHeader | None:
    """The header of a copy whose first ``HEADER_SIZE`` bytes are ``page``; None when they
    are no flash header at all (empty, foreign, or cut short)."""
    if len(page) < HEADER_SIZE:
        return None
    magic, seq, step, data_len, meta_len, dir_len = _HEAD.unpack_from(page, 0)
    if magic != MAGIC or dir_len > MAX_DIR_BYTES:
        return None
    start = _HEAD.size
    try:
        storage_dir = page[start : start + dir_len].decode()
    except UnicodeDecodeError:
        return None
    seal_magic, seal_seq = _SEAL.unpack_from(page, SEAL_OFFSET)
    sealed = seal_magic == SEAL_MAGIC and seal_seq == seq and seq > 0
    return SlotHeader(seq, step, data_len, meta_len, storage_dir, sealed)


def aligned(offset: int) -> int:
    """``offset`` rounded up to ``ALIGN``."""
    return (offset + ALIGN - 1) // ALIGN * ALIGN


def newest_sealed(headers: Sequence[SlotHeader | None]) -> int | None:
    """Index of the complete copy with the highest ``seq`` (None: no complete copy)."""
    best: int | None = None
    for i, h in enumerate(headers):
        if h is None or not h.sealed:
            continue
        if best is None or h.seq > headers[best].seq:  # type: ignore[union-attr]
            best = i
    return best


def slot_to_write(headers: Sequence[SlotHeader | None]) -> int:
    """The slot the next save overwrites: never the newest complete copy (it must survive a
    kill mid-write); the first slot when none is complete."""
    keep = newest_sealed(headers)
    if keep is None:
        return 0
    return (keep + 1) % len(headers)


def next_seq(headers: Sequence[SlotHeader | None]) -> int:
    """The save number after every copy seen (sealed or torn), so it only grows."""
    return max((h.seq for h in headers if h is not None), default=0) + 1


class RestoreFrom(enum.Enum):
    """Where a restart takes its training state from."""

    MEMORY = "memory"  # the process's shared-memory copy (newest, no disk read)
    STORAGE = "storage"  # the flash copy the agent wrote to the checkpoint directory
    NONE = "none"  # no complete flash copy: the ordinary checkpoint, if any


def restore_from(memory: SlotHeader | None, storage: SlotHeader | None) -> RestoreFrom:
    """The shared-memory copy when it is complete and at least as new as storage's; else the
    complete storage copy; else none. Torn copies never count."""
    mem = memory if memory is not None and memory.sealed else None
    disk = storage if storage is not None and storage.sealed else None
    if mem is not None and (disk is None or mem.step >= disk.step):
        return RestoreFrom.MEMORY
    if disk is not None:
        return RestoreFrom.STORAGE
    return RestoreFrom.NONE


def should_persist(slot: SlotHeader | None, stored: SlotHeader | None) -> bool:
    """Write the slot to storage only when it is complete and newer than what is there."""
    if slot is None or not slot.sealed:
        return False
    return stored is None or not stored.sealed or slot.step > stored.step
