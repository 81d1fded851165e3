"""Splitters: cut a dataset into shards of sample indices, the same way every time.

Two shapes of dataset: ``RangeSplitter`` for N samples numbered 0..N-1, ``FileSplitter`` for a
list of files or table row ranges. A splitter only computes which indices go in which shard for
a given epoch (with an optional seeded shuffle); it never reads data and holds no progress —
that is ``ShardManager``'s job.
"""

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, overload

from flexjob.core.training.permutation import SeededPermutation

_FILE_ENTRY = re.compile(r"^(?P<name>.+?):(?:(?P<start>\d+)-(?P<end>\d+)|(?P<rows>\d+))$")


@dataclass(frozen=True, slots=True)
class ShardSpec:
    """The samples of one shard: explicit ``indices``, else rows ``[start, end)`` of ``name``.

    ``offset`` maps a row of ``name`` to a dataset-wide sample index (``offset + row``); it is
    0 for range datasets, where rows are the sample indices themselves.
    """

    start: int
    end: int
    indices: tuple[int, ...] = ()
    name: str = ""
    offset: int = 0

    @property
    def size(self) -> int:
        return len(self.indices) if self.indices else self.end - self.start

    def sample_indices(self) -> tuple[int, ...]:
        """Dataset-wide sample indices of this shard."""
        if self.indices:
            return tuple(self.offset + i for i in self.indices)
        return tuple(range(self.offset + self.start, self.offset + self.end))


class Splitter(Protocol):
    """Cuts a dataset into the same ``num_shards`` shards each epoch (order may change)."""

    @property
    def num_shards(self) -> int: ...

    @property
    def num_samples(self) -> int: ...

    def shards(self, epoch: int) -> Sequence[ShardSpec]: ...

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description; equal descriptions mean equal shards."""
        ...


def _check_positive(field: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{field} must be a positive integer, got {value}")


def _epoch_key(seed: int, epoch: int) -> str:
    return f"flexjob:{seed}:{epoch}"


def _epoch_rng(seed: int, epoch: int) -> random.Random:
    return random.Random(_epoch_key(seed, epoch))


@dataclass(frozen=True, slots=True)
class RangeSplitter:
    """Samples ``0..size-1`` in shards of ``shard_size``; shuffled per epoch when ``shuffle``.

    With ``shuffle`` every epoch is a new permutation of all indices chosen by ``seed`` and the
    epoch number (``core.training.permutation``: computed shard by shard, never materialised), and
    shards carry explicit indices; without it shards are contiguous ranges.
    """

    size: int
    shard_size: int
    shuffle: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        _check_positive("size", self.size)
        _check_positive("shard_size", self.shard_size)

    @property
    def num_shards(self) -> int:
        return -(-self.size // self.shard_size)

    @property
    def num_samples(self) -> int:
        return self.size

    def shards(self, epoch: int) -> Sequence[ShardSpec]:
        if not self.shuffle:
            return _RangeShards(self.size, self.shard_size, None)
        order = SeededPermutation(self.size, _epoch_key(self.seed, epoch))
        return _RangeShards(self.size, self.shard_size, order)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "range",
            "size": self.size,
            "shard_size": self.shard_size,
            "shuffle": self.shuffle,
            "seed": self.seed,
        }


class _RangeShards(Sequence[ShardSpec]):
    """The shards of one epoch of a range dataset, made on demand: opening an epoch of
    millions of samples costs nothing, not one object per shard nor a list of its indices."""

    __slots__ = ("_order", "_size", "_step")

    def __init__(self, size: int, step: int, order: SeededPermutation | None) -> None:
        self._size, self._step, self._order = size, step, order

    def __len__(self) -> int:
        return -(-self._size // self._step)

    @overload
    def __getitem__(self, pos: int) -> ShardSpec: ...

    @overload
    def __getitem__(self, pos: slice) -> Sequence[ShardSpec]: ...

    def __getitem__(self, pos: int | slice) -> ShardSpec | Sequence[ShardSpec]:
        if isinstance(pos, slice):
            return [self[i] for i in range(*pos.indices(len(self)))]
        if pos < 0:
            pos += len(self)
        if not 0 <= pos < len(self):
            raise IndexError(f"shard position {pos} out of range")
        start = pos * self._step
        end = min(start + self._step, self._size)
        if self._order is None:
            return ShardSpec(start, end)
        return ShardSpec(0, 0, indices=self._order.slice(start, end))


@dataclass(frozen=True, slots=True)
class FileRange:
    """Rows ``[start, end)`` of one file or table."""

    name: str
    start: int
    end: int

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("file name must not be empty")
        if not 0 <= self.start < self.end:
            raise ValueError(
                f"file {self.name!r}: row range must satisfy 0 <= start < end, "
                f"got [{self.start}, {self.end})"
            )


def parse_file_entry(entry: str) -> FileRange:
    """``NAME:ROWS`` → rows [0, ROWS); ``NAME:START-END`` → rows [START, END); ``NAME`` alone
    is one sample (the whole file)."""
    match = _FILE_ENTRY.match(entry)
    if match is None:
        return FileRange(entry, 0, 1)
    if match["rows"] is not None:
        return FileRange(match["name"], 0, int(match["rows"]))
    return FileRange(match["name"], int(match["start"]), int(match["end"]))


@dataclass(frozen=True, slots=True)
class FileSplitter:
    """Each file's rows in shards of ``shard_size`` (a shard never spans two files).

    Sample indices run through the files in order: the first row of file k has the index
    ``sum of the rows of files 0..k-1``. ``shuffle`` reorders the shards each epoch.
    """

    files: tuple[FileRange, ...]
    shard_size: int
    shuffle: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        _check_positive("shard_size", self.shard_size)
        if not self.files:
            raise ValueError("files must list at least one file")

    def _base(self) -> list[ShardSpec]:
        specs: list[ShardSpec] = []
        offset = 0
        for f in self.files:
            for s in range(f.start, f.end, self.shard_size):
                end = min(s + self.shard_size, f.end)
                specs.append(ShardSpec(s, end, name=f.name, offset=offset - f.start))
            offset += f.end - f.start
        return specs

    @property
    def num_shards(self) -> int:
        return sum(-(-(f.end - f.start) // self.shard_size) for f in self.files)

    @property
    def num_samples(self) -> int:
        return sum(f.end - f.start for f in self.files)

    def shards(self, epoch: int) -> Sequence[ShardSpec]:
        specs = self._base()
        if self.shuffle:
            _epoch_rng(self.seed, epoch).shuffle(specs)
        return specs

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "files",
            "files": [[f.name, f.start, f.end] for f in self.files],
            "shard_size": self.shard_size,
            "shuffle": self.shuffle,
            "seed": self.seed,
        }
