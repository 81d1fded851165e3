"""BatchPlan: keep the global batch fixed while the world size changes.

With ``total_micro_batches`` M per step and N0 live workers, worker i runs
``M // N0 + 1`` micro-batches when ``i < M % N0``, else ``M // N0``, then all-reduces. The
DLRover form has M = max workers N (one micro-batch each at full size); the general form has
M = global batch size / micro-batch size. Not for learning-rate scaling or data loading.
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """``total_micro_batches`` micro-batches of ``micro_batch_size`` samples per global step."""

    micro_batch_size: int
    total_micro_batches: int

    def __post_init__(self) -> None:
        if self.micro_batch_size < 1:
            raise ValueError(f"micro_batch_size must be >= 1, got {self.micro_batch_size}")
        if self.total_micro_batches < 1:
            raise ValueError(f"total_micro_batches must be >= 1, got {self.total_micro_batches}")

    @classmethod
    def for_max_workers(cls, max_workers: int, micro_batch_size: int) -> "BatchPlan":
        """The global batch of ``max_workers`` workers doing one micro-batch each."""
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        return cls(micro_batch_size, max_workers)

    @classmethod
    def for_global_batch(cls, global_batch_size: int, micro_batch_size: int) -> "BatchPlan":
        """``global_batch_size`` must be a multiple of ``micro_batch_size``."""
        if micro_batch_size < 1:
            raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
        if global_batch_size < micro_batch_size or global_batch_size % micro_batch_size:
            raise ValueError(
                f"global_batch_size must be a positive multiple of micro_batch_size "
                f"({micro_batch_size}), got {global_batch_size}"
            )
        return cls(micro_batch_size, global_batch_size // micro_batch_size)

    @property
    def global_batch_size(self) -> int:
        return self.micro_batch_size * self.total_micro_batches

    def micro_batches(self, rank: int, world_size: int) -> int:
        """Micro-batches worker ``rank`` runs before each all-reduce (0 when the world is
        bigger than the number of micro-batches and this rank has none)."""
        if world_size < 1:
            raise ValueError(f"world_size must be >= 1, got {world_size}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
        base, extra = divmod(self.total_micro_batches, world_size)
        return base + 1 if rank < extra else base

    def assignment(self, world_size: int) -> tuple[int, ...]:
        """Micro-batches of every rank, in rank order; they sum to ``total_micro_batches``."""
        return tuple(self.micro_batches(r, world_size) for r in range(world_size))
