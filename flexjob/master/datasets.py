"""The datasets a master shards: those the job spec declares and those trainers registered
while it runs, one ``ShardManager`` each.

Owns the lookup by name (an unknown name is a ``NotFoundError`` listing the known ones) and the
rule that a name keeps its first definition: the same definition again changes nothing, another
one under a known name is refused naming it (``AlreadyExistsError``). Not for saving
registrations (the master journals them, ``master.persistence`` replays them) nor for handing
out shards (``core.training.shards``).
"""

from collections.abc import Callable

from flexjob.api.errors import AlreadyExistsError, InvalidSpecError, NotFoundError
from flexjob.api.limits import MAX_DATASETS
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import ShardConfig
from flexjob.core.training.shards import ShardManager


class DatasetBook:
    def __init__(
        self, shards: ShardConfig, datasets: tuple[Dataset, ...], clock: Callable[[], float]
    ) -> None:
        self._slow_shard_timeout = shards.slow_shard_timeout
        self._clock = clock
        self.managers: dict[str, ShardManager] = {}  # every dataset, by name
        self.registered: dict[str, Dataset] = {}  # the ones trainers registered
        self._declared = {d.name: d for d in datasets}
        for d in datasets:
            self.managers[d.name] = self._manager(d)

    def get(self, name: str) -> ShardManager:
        mgr = self.managers.get(name)
        if mgr is None:
            known = ", ".join(repr(n) for n in self.managers) or "none"
            raise NotFoundError(f"unknown dataset {name!r}; this job has: {known}")
        return mgr

    def knows(self, name: str) -> bool:
        return name in self.managers

    def is_new(self, dataset: Dataset) -> bool:
        """Whether ``dataset`` is to be added: False when its name already has this very
        definition; ``AlreadyExistsError`` naming the dataset when it has another one."""
        known = self.registered.get(dataset.name) or self._declared.get(dataset.name)
        if known is None:
            return True
        if known == dataset:
            return False
        raise AlreadyExistsError(
            f"dataset {dataset.name!r} is already defined as {_describe(known)}; another "
            f"definition ({_describe(dataset)}) under that name is refused"
        )

    def add_registered(self, dataset: Dataset) -> ShardManager:
        """Shard ``dataset`` from now on (the caller checked its name is new and
        ``check_room``)."""
        mgr = self._manager(dataset)
        self.registered[dataset.name] = dataset
        self.managers[dataset.name] = mgr
        return mgr

    def check_room(self, dataset: Dataset) -> None:
        """Refuse a new dataset once the job has ``MAX_DATASETS`` (before it is journaled)."""
        if len(self.managers) >= MAX_DATASETS:
            raise InvalidSpecError(
                f"dataset {dataset.name!r}: this job has {MAX_DATASETS} datasets, the most"
            )

    @property
    def finished(self) -> bool:
        """Every dataset done (and there is at least one)."""
        return bool(self.managers) and all(m.finished for m in self.managers.values())

    def _manager(self, dataset: Dataset) -> ShardManager:
        return ShardManager(
            dataset.splitter(),
            epochs=dataset.epochs,
            slow_shard_timeout=self._slow_shard_timeout,
            clock=self._clock,
        )


def _describe(d: Dataset) -> str:
    """A dataset's definition in a few words (its files counted, not listed)."""
    what = f"size={d.size}" if d.size is not None else f"{len(d.files)} file(s)"
    return (
        f"{what}, shard_size={d.shard_size}, epochs={d.epochs}, shuffle={d.shuffle}, seed={d.seed}"
    )
