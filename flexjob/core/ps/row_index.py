"""``RowIndex``: an embedding table's id → row-slot map, as numpy arrays (open addressing).

A table's rows sit in slots ``0, 1, 2, ...`` of its slabs in creation order; this index finds
the slot of each id of a batch with a few vectorised passes instead of one Python dict call
per id. Keys and slots live in two arrays of a power-of-two capacity, at most half full;
an id's home is a Fibonacci hash of it, and a taken home sends it on to the next cell
(linear probing), so a lookup is a handful of whole-batch numpy steps. Any int64 is a valid
id (an empty cell is marked by slot -1, not by a reserved key). Pure: no I/O, no locking.
"""

import numpy as np

from flexjob.core.ps.partition import IdArray, IndexArray

_FIB = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: Fibonacci hashing
_MIN_BITS = 10
_EMPTY = -1
#: Ids wanting free cells from which one round picks its winners by a scatter (linear) rather
#: than a sort (``np.unique``): a bulk load (a PS restoring 10^6 rows) spends its time here.
_SCATTER_FROM = 1 << 15


class RowIndex:
    def __init__(self) -> None:
        self._bits = _MIN_BITS
        self._keys = np.zeros(1 << _MIN_BITS, dtype=np.int64)
        self._slots = np.full(1 << _MIN_BITS, _EMPTY, dtype=np.int64)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def find(self, ids: IdArray) -> IndexArray:
        """The slot of each id, ``-1`` where the id has none."""
        out = np.full(ids.size, _EMPTY, dtype=np.intp)
        cells = self._home(ids)
        todo = np.arange(ids.size)
        keys, slots, mask = self._keys, self._slots, (1 << self._bits) - 1
        while todo.size:
            slot = slots[cells]
            hit = (slot != _EMPTY) & (keys[cells] == ids[todo])
            out[todo[hit]] = slot[hit]
            going = (slot != _EMPTY) & ~hit  # taken by another id: probe the next cell
            todo, cells = todo[going], (cells[going] + 1) & mask
        return out

    def add(self, new_ids: IdArray) -> None:
        """Give ``new_ids`` (distinct, none in the index yet) the next slots, in order."""
        start = self._size
        if 2 * (start + new_ids.size) > self._keys.size:
            self._rehash(start + new_ids.size)
        self._insert(new_ids, np.arange(start, start + new_ids.size, dtype=np.int64))
        self._size = start + new_ids.size

    def slots_of(self, ids: IdArray) -> tuple[IndexArray, IdArray]:
        """The slot of every id, first adding the ids never seen (in ascending order);
        returns (slots, the ids added)."""
        where = self.find(ids)
        missing = where < 0
        if not missing.any():
            return where, ids[:0]
        absent = ids[missing]
        new_ids = np.unique(absent)
        self.add(new_ids)
        where[missing] = self.find(absent)
        return where, new_ids

    def _home(self, ids: IdArray) -> IndexArray:
        with np.errstate(over="ignore"):
            hashed = ids.view(np.uint64) * _FIB
        return (hashed >> np.uint64(64 - self._bits)).astype(np.intp)

    def _insert(self, ids: IdArray, slots: IdArray) -> None:
        """Put distinct ``ids`` (none present) into free cells, colliding ones one at a time
        per cell: of ids that want the same free cell, one takes it, the rest probe on."""
        cells = self._home(ids)
        mask = (1 << self._bits) - 1
        todo = np.arange(ids.size)
        claim = np.empty(0, dtype=np.intp)
        while todo.size:
            free = np.flatnonzero(self._slots[cells] == _EMPTY)
            want = cells[free]
            if want.size < _SCATTER_FROM:
                _, first = np.unique(want, return_index=True)
                won = free[first]
            else:  # one claim per cell: each writes its position, the one left in the cell wins
                if claim.size != mask + 1:
                    claim = np.empty(mask + 1, dtype=np.intp)  # untouched cells stay unpaged
                claim[want] = free
                won = free[claim[want] == free]
            self._keys[cells[won]] = ids[todo[won]]
            self._slots[cells[won]] = slots[todo[won]]
            going = np.ones(todo.size, dtype=bool)
            going[won] = False
            todo, cells = todo[going], (cells[going] + 1) & mask

    def _rehash(self, needed: int) -> None:
        bits = self._bits
        while (1 << bits) < 2 * needed:
            bits += 1
        taken = self._slots != _EMPTY
        keys, slots = self._keys[taken], self._slots[taken]
        self._bits = bits
        self._keys = np.zeros(1 << bits, dtype=np.int64)
        self._slots = np.full(1 << bits, _EMPTY, dtype=np.int64)
        self._insert(keys, slots)
