"""Seeded, stateless initial values for embedding rows, created lazily on first lookup.

A row's initial value depends only on (seed, table, id): whichever PS creates it, whenever,
it gets the same numbers, so a table of 10^7+ rows is never materialised up front and a
re-partitioned PS set (issue 15) agrees on rows nobody has touched yet. Values are uniform in
``[-scale, scale)`` (``scale`` 0 gives zeros). Pure: no I/O, no global random state.
"""

import zlib

import numpy as np
import numpy.typing as npt

from flexjob.core.ps.partition import IdArray, splitmix64

FloatArray = npt.NDArray[np.float32]
_ROW_STRIDE = np.uint64(0xD1B54A32D192ED03)
_INV_2_53 = 1.0 / float(1 << 53)


def table_seed(seed: int, table: str) -> int:
    """The seed of one table: the job's seed mixed with a stable hash of the table's name."""
    return (seed * 0x100000001B3 + zlib.crc32(table.encode())) & 0xFFFFFFFFFFFFFFFF


def initial_rows(ids: IdArray, dim: int, seed: int, scale: float) -> FloatArray:
    """Initial values of rows ``ids`` (``len(ids) x dim``, float32) for a table's ``seed``."""
    ids64 = np.asarray(ids, dtype=np.int64).view(np.uint64)
    if scale == 0.0 or ids64.size == 0:
        return np.zeros((ids64.size, dim), dtype=np.float32)
    with np.errstate(over="ignore"):
        base = splitmix64(ids64 ^ np.uint64(seed)) * _ROW_STRIDE
        counters = base[:, None] + np.arange(dim, dtype=np.uint64)[None, :]
    bits = splitmix64(counters) >> np.uint64(11)
    unit = bits.astype(np.float64) * _INV_2_53
    return ((unit * 2.0 - 1.0) * scale).astype(np.float32)
