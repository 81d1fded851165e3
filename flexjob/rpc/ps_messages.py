"""The PS RPC in Python terms: the ``PsBackend`` protocol the servicer calls (one method per
RPC, numpy arrays in and out) and the ``PsStats`` it reports. No gRPC here.

Errors: a backend raises ``api.errors.InvalidSpecError`` (→ INVALID_ARGUMENT) or
``NotFoundError`` (→ NOT_FOUND); the client raises the same kinds with the PS's message, which
names the field.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from flexjob.core.ps.parameters import ModelSpec

Floats = npt.NDArray[np.float32]
Ids = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class PsStats:
    """What a PS reports: rows and bytes held, load, and its process's CPU and memory."""

    rows: int
    bytes: int
    requests: int
    requests_per_second: float
    cpu_percent: float
    memory_bytes: int
    version: int
    index: int
    num_ps: int
    tables: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # name → (rows, bytes)


class PsBackend(Protocol):
    def configure(self, model: ModelSpec, num_ps: int) -> tuple[int, bool]:
        """Declare the model; (dense version, whether this call created it)."""
        ...

    def pull_dense(self, known_version: int) -> tuple[int, Mapping[str, Floats]]:
        """(version, params); params empty when nothing changed since ``known_version``."""
        ...

    def push_dense(self, grads: Mapping[str, Floats], base_version: int) -> int: ...

    def lookup(self, table: str, ids: Ids) -> Floats: ...

    def push_rows(self, table: str, ids: Ids, grads: Floats) -> int: ...

    def push_lookup(
        self, table: str, push_ids: Ids, grads: Floats, lookup_ids: Ids
    ) -> tuple[int, Floats]:
        """``push_rows`` then ``lookup`` in one call: (rows updated, rows looked up)."""
        ...

    def stats(self) -> PsStats: ...
