"""``Dataset``: a dataset the master shards, the one model of it from spec to splitter.

Built from a job's ``spec.dataset`` (``dataset_from_spec``), from ``flexjob run`` options, or
registered by a training script over the master's typed ``RegisterDataset`` call (the trainer's
``ElasticSampler(size=...)``). Knows its splitter; holds no progress (``core.training.shards``).
Bounded (``api.limits``): a dataset too large for the master to track is refused when made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from flexjob.api.errors import InvalidSpecError
from flexjob.api.limits import dataset_problem
from flexjob.core.training.splitters import FileSplitter, RangeSplitter, Splitter, parse_file_entry

if TYPE_CHECKING:  # the pydantic model: only its type here (processes start faster)
    from flexjob.api import DatasetSpec

DEFAULT_SHARD_SIZE = 64


@dataclass(frozen=True, slots=True)
class Dataset:
    """``size`` samples, or ``files`` (``NAME[:ROWS|:START-END]``), cut into shards of
    ``shard_size`` for ``epochs`` epochs, optionally shuffled with ``seed``."""

    name: str = ""
    size: int | None = None
    files: tuple[str, ...] = ()
    shard_size: int = DEFAULT_SHARD_SIZE
    epochs: int = 1
    shuffle: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if (self.size is None) == (not self.files):
            raise InvalidSpecError("dataset: give exactly one of size or files")
        if self.epochs < 1:
            raise InvalidSpecError(f"dataset.epochs must be >= 1, got {self.epochs}")
        if self.size is not None:  # bounded before a splitter of that size is made
            self._check_bounds(self.size)
        try:
            splitter = self.splitter()  # validates shard_size and the file entries
        except ValueError as exc:  # a splitter's own check: name the dataset's field
            field = "files" if self.files else "shard_size"
            raise InvalidSpecError(f"dataset {self.name!r}: {field}: {exc}") from None
        self._check_bounds(splitter.num_samples)

    def _check_bounds(self, samples: int) -> None:
        problem = dataset_problem(samples, self.shard_size, self.epochs)
        if problem:
            raise InvalidSpecError(f"dataset {self.name!r}: {problem}")

    def splitter(self) -> Splitter:
        if self.size is not None:
            return RangeSplitter(self.size, self.shard_size, self.shuffle, self.seed)
        entries = tuple(parse_file_entry(f) for f in self.files)
        return FileSplitter(entries, self.shard_size, self.shuffle, self.seed)


def dataset_from_spec(spec: DatasetSpec) -> Dataset:
    """The dataset of a job's ``spec.dataset``, unset fields defaulted."""
    return Dataset(
        name=spec.name or "",
        size=spec.size,
        files=tuple(spec.files or ()),
        shard_size=DEFAULT_SHARD_SIZE if spec.shard_size is None else spec.shard_size,
        epochs=1 if spec.epochs is None else spec.epochs,
        shuffle=bool(spec.shuffle),
        seed=spec.shuffle_seed or 0,
    )
