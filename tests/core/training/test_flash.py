"""The flash checkpoint rules: a copy counts only with its seal; which copy a restart takes."""

from __future__ import annotations

import pytest

from flexjob.core.training.flash import (
    HEADER_SIZE,
    MAX_DIR_BYTES,
    SEAL_OFFSET,
    UNSEALED,
    RestoreFrom,
    SlotHeader,
    decode_header,
    encode_header,
    encode_seal,
    newest_sealed,
    next_seq,
    restore_from,
    should_persist,
    slot_to_write,
)


def page(seq: int, step: int, seal: bytes | None, storage_dir: str = "/ckpt") -> bytes:
    raw = bytearray(HEADER_SIZE)
    head = encode_header(seq, step, 128, 16, storage_dir)
    raw[: len(head)] = head
    if seal is not None:
        raw[SEAL_OFFSET : SEAL_OFFSET + len(seal)] = seal
    return bytes(raw)


def h(seq: int, step: int, sealed: bool = True) -> SlotHeader:
    return SlotHeader(seq, step, 0, 0, "/ckpt", sealed)


def test_a_sealed_header_reads_back_whole() -> None:
    got = decode_header(page(3, 41, encode_seal(3), "/jobs/ckpt"))
    assert got == SlotHeader(3, 41, 128, 16, "/jobs/ckpt", True)
    assert got.total_len == HEADER_SIZE + 128 + 16


@pytest.mark.parametrize(
    "seal",
    [None, UNSEALED, encode_seal(2), encode_seal(4)],
    ids=["never-sealed", "unsealed-marker", "older-seal", "other-seal"],
)
def test_a_copy_without_its_own_seal_is_torn(seal: bytes | None) -> None:
    got = decode_header(page(3, 41, seal))
    assert got is not None and not got.sealed


@pytest.mark.parametrize(
    "raw", [b"", b"x" * 10, bytes(HEADER_SIZE), b"NOTFLASH" + bytes(HEADER_SIZE - 8)]
)
def test_bytes_that_are_no_flash_copy_give_no_header(raw: bytes) -> None:
    assert decode_header(raw) is None


def test_a_storage_dir_longer_than_the_header_holds_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"checkpoint_dir is \d+ bytes long"):
        encode_header(1, 1, 0, 0, "d" * (MAX_DIR_BYTES + 1))


def test_the_next_save_never_overwrites_the_newest_complete_copy() -> None:
    assert slot_to_write([None, None]) == 0
    assert slot_to_write([h(1, 1), None]) == 1
    assert slot_to_write([h(1, 1), h(2, 2)]) == 0
    assert slot_to_write([h(3, 3), h(2, 2)]) == 1
    # slot 1 torn by a kill: slot 0 is still the newest complete copy and is kept
    assert slot_to_write([h(3, 3), h(4, 4, sealed=False)]) == 1
    assert newest_sealed([h(3, 3), h(4, 4, sealed=False)]) == 0
    assert newest_sealed([h(1, 1, False), None]) is None


def test_save_numbers_only_grow_also_past_a_torn_copy() -> None:
    assert next_seq([None, None]) == 1
    assert next_seq([h(3, 3), h(4, 4, sealed=False)]) == 5


@pytest.mark.parametrize(
    ("memory", "storage", "expected"),
    [
        (None, None, RestoreFrom.NONE),
        (h(1, 5), None, RestoreFrom.MEMORY),
        (None, h(1, 5), RestoreFrom.STORAGE),
        (h(2, 7), h(1, 5), RestoreFrom.MEMORY),  # memory newer: the last flash save
        (h(2, 5), h(1, 5), RestoreFrom.MEMORY),  # as new: no disk read
        (h(2, 3), h(1, 5), RestoreFrom.STORAGE),  # storage newer (another process wrote it)
        (h(2, 9, sealed=False), h(1, 5), RestoreFrom.STORAGE),  # torn memory never counts
        (h(2, 9, sealed=False), None, RestoreFrom.NONE),
        (h(2, 3), h(1, 9, sealed=False), RestoreFrom.MEMORY),
    ],
)
def test_restore_takes_the_newest_complete_copy_memory_first(
    memory: SlotHeader | None, storage: SlotHeader | None, expected: RestoreFrom
) -> None:
    assert restore_from(memory, storage) is expected


def test_only_a_complete_copy_newer_than_storage_is_written() -> None:
    assert should_persist(h(2, 7), None)
    assert should_persist(h(2, 7), h(1, 5))
    assert should_persist(h(2, 7), h(1, 9, sealed=False))
    assert not should_persist(h(2, 7), h(1, 7))
    assert not should_persist(h(2, 7, sealed=False), None)
    assert not should_persist(None, None)
