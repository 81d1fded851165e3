"""Which PS replica owns which parameter: dense tensors by name, embedding rows by id.

Dense parameters are assigned whole, largest first, to the least-loaded PS (ties broken by PS
index, then by name), so a PS set's plan is a pure function of (names, sizes, number of PS).
Embedding rows are owned by ``stable_hash(id) % num_ps``: the same id maps to the same PS on
every process and every run, and a new PS set (issue 15: PS elasticity) re-partitions by
calling the same functions with its own size — ``rehash_moves`` says which rows change owner.
Not for serving (``flexjob.ps``) or for talking to a PS (``flexjob.trainer.ps``).
"""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IdArray = npt.NDArray[np.int64]
IndexArray = npt.NDArray[np.intp]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def splitmix64(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finalizer: a stable, well-mixed 64-bit hash (same on every platform)."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        return z ^ (z >> np.uint64(31))


def row_owners(ids: IdArray, num_ps: int) -> IndexArray:
    """The PS index (``0 .. num_ps-1``) that owns each embedding row id."""
    if num_ps < 1:
        raise ValueError(f"num_ps must be >= 1, got {num_ps}")
    hashed = splitmix64(np.asarray(ids, dtype=np.int64).view(np.uint64))
    return (hashed % np.uint64(num_ps)).astype(np.intp)


@dataclass(frozen=True, slots=True)
class RowSplit:
    """One batch of ids split over a PS set: ``ids[ps]`` are the unique ids PS ``ps`` serves,
    and ``unique[positions[ps]] == ids[ps]``; ``inverse`` maps every input position to its
    index in ``unique`` (so ``rows_of_unique[inverse]`` is the batch's rows)."""

    unique: IdArray
    inverse: IndexArray
    ids: tuple[IdArray, ...]
    positions: tuple[IndexArray, ...]


def split_ids(ids: IdArray, num_ps: int) -> RowSplit:
    """Deduplicate ``ids`` and group the unique ones by owning PS."""
    unique, inverse = np.unique(np.asarray(ids, dtype=np.int64).ravel(), return_inverse=True)
    owners = row_owners(unique, num_ps)
    positions = tuple(np.flatnonzero(owners == ps) for ps in range(num_ps))
    return RowSplit(unique, inverse.astype(np.intp), tuple(unique[p] for p in positions), positions)


def assign_dense(sizes: Mapping[str, int], num_ps: int) -> dict[str, int]:
    """Dense parameter name → PS index, balancing the total number of elements per PS."""
    if num_ps < 1:
        raise ValueError(f"num_ps must be >= 1, got {num_ps}")
    load = [0] * num_ps
    plan: dict[str, int] = {}
    for name in sorted(sizes, key=lambda n: (-sizes[n], n)):
        ps = min(range(num_ps), key=lambda i: (load[i], i))
        plan[name] = ps
        load[ps] += sizes[name]
    return plan


def rehash_moves(ids: IdArray, old_num_ps: int, new_num_ps: int) -> tuple[IndexArray, IndexArray]:
    """For rows ``ids`` of a PS set of ``old_num_ps``: (old owner, new owner) of each row when
    the set becomes ``new_num_ps``. A new PS loads from every old partition the rows whose new
    owner it is; each row lands on exactly one new PS."""
    return row_owners(ids, old_num_ps), row_owners(ids, new_num_ps)
