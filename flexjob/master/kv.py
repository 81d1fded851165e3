"""The master's small key-value store, durable across master restarts.

Agents publish each round's torch master here, rank 0 publishes its step, the master itself
keeps the job's incarnation id.
Every change is one journal entry (``{"k": key, "v": base64}``) appended before the call that
made it returns; a snapshot holds the whole store. Not for deciding what is stored (callers
do) nor for writing files (``master.persistence``).
"""

import base64
import uuid
from typing import Any

from flexjob.api import names
from flexjob.api.errors import InvalidSpecError
from flexjob.api.limits import (
    KV_INT_MAX,
    KV_INT_MIN,
    MAX_KV_KEY_BYTES,
    MAX_KV_KEYS,
    MAX_KV_TOTAL_BYTES,
    MAX_KV_VALUE_BYTES,
    profilings_from_json,
)


def _size(key: str, value: bytes) -> int:
    return len(key.encode("utf-8", "surrogateescape")) + len(value)


class KVStore:
    """The keys and values, bounded per job (``api.limits``: keys, bytes in all)."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._bytes = 0  # of every key and value
        self.version = 0  # bumped by every change (snapshots re-serialize only when it moved)

    def get(self, key: str) -> bytes | None:
        return self._data.get(key)

    def set(self, key: str, value: bytes) -> dict[str, str]:
        """Store ``value``; returns the journal entry that replays this change.
        ``InvalidSpecError`` when the job's store would hold too many keys or bytes."""
        old = self._data.get(key)
        if old is None and len(self._data) >= MAX_KV_KEYS:
            raise InvalidSpecError(
                f"key {key!r}: the job's store holds {MAX_KV_KEYS} keys, the most"
            )
        total = self._bytes + _size(key, value) - (0 if old is None else _size(key, old))
        if total > MAX_KV_TOTAL_BYTES:
            raise InvalidSpecError(
                f"value of {key!r}: the job's store would hold {total} bytes, at most "
                f"{MAX_KV_TOTAL_BYTES}"
            )
        self._put(key, value)
        return {"k": key, "v": base64.b64encode(value).decode()}

    def _put(self, key: str, value: bytes) -> None:
        old = self._data.get(key)
        self._bytes += _size(key, value) - (0 if old is None else _size(key, old))
        self._data[key] = value
        self.version += 1

    def add(self, key: str, amount: int) -> tuple[int, dict[str, str]]:
        """Add ``amount`` to the integer at ``key`` (0 when absent); the new value and the
        journal entry."""
        try:
            value = int(self._data.get(key, b"0")) + amount
        except ValueError:
            raise InvalidSpecError(f"key {key!r} does not hold an integer") from None
        if not KV_INT_MIN <= value <= KV_INT_MAX:
            raise InvalidSpecError(
                f"key {key!r}: adding {amount} gives {value}, outside the 64-bit range "
                f"{KV_INT_MIN}..{KV_INT_MAX}"
            )
        return value, self.set(key, str(value).encode())

    def ensure_incarnation(self) -> dict[str, str] | None:
        """Give the job an incarnation id if it has none; the journal entry when one was made."""
        if names.KV_INCARNATION in self._data:
            return None
        return self.set(names.KV_INCARNATION, uuid.uuid4().hex.encode())

    def to_dict(self) -> dict[str, str]:
        return {k: base64.b64encode(v).decode() for k, v in self._data.items()}

    def restore(self, saved: dict[str, Any]) -> None:
        self._data = {str(k): base64.b64decode(v) for k, v in saved.items()}
        self._bytes = sum(_size(k, v) for k, v in self._data.items())
        self.version += 1

    def replay(self, entry: dict[str, Any]) -> None:
        """Apply one journal entry made by ``set``."""
        self._put(str(entry["k"]), base64.b64decode(entry["v"]))


def check_kv(key: str, value: bytes) -> None:
    """Refuse a KV key or value above ``api.limits`` bounds (they live in the master's memory),
    and profilings (``names.KV_PROFILINGS``) that are no bounded JSON object: the master copies
    them into the job's status (``master.profilings_sync``)."""
    if len(key.encode()) > MAX_KV_KEY_BYTES:
        raise InvalidSpecError(f"key: {len(key.encode())} bytes, at most {MAX_KV_KEY_BYTES}")
    if len(value) > MAX_KV_VALUE_BYTES:
        raise InvalidSpecError(
            f"value of {key!r}: {len(value)} bytes, at most {MAX_KV_VALUE_BYTES}"
        )
    if key == names.KV_PROFILINGS:
        profilings_from_json(f"value of {key!r}", value)


def is_kv_entry(entry: dict[str, Any]) -> bool:
    """True for a journal entry written by the KV store (the others are shard reports)."""
    return "k" in entry
