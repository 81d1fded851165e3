"""What a master snapshot holds and how it is read back: shard progress per dataset, the
datasets trainers registered, the rendezvous round / members / join ages, per-node stats,
node addresses, the KV store, the nodes' memberships (``master.members``: a node fenced before
a restart stays fenced) and the generation of the master that wrote it, as one JSON object.

``SnapshotWriter`` re-serializes only the parts that changed since its last call (rendezvous
and stats change rarely; shard progress changes all the time). Not for writing files
(``master.state_file``) or deciding when to snapshot (``master.persistence``).
"""

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from flexjob.core.training.dataset import Dataset
from flexjob.core.training.rendezvous import Rendezvous
from flexjob.core.training.shards import ShardManager
from flexjob.master.kv import KVStore
from flexjob.master.members import MemberBook
from flexjob.master.stats import StatsBook

STATE_VERSION = 1


class SnapshotWriter:
    def __init__(self) -> None:
        self._cache: dict[str, tuple[int, str]] = {}

    def text(
        self,
        job: str,
        shards: dict[str, ShardManager],
        rdzv: Rendezvous,
        stats: StatsBook,
        addresses: dict[str, str],
        addresses_version: int,
        kv: KVStore,
        registered: dict[str, Dataset],
        members: MemberBook,
    ) -> str:
        """The snapshot. ``addresses``: node → address given at join, re-serialized only when
        ``addresses_version`` changed."""
        progress = {name: mgr.to_dict() for name, mgr in shards.items()}
        rdzv_json = self._cached("rendezvous", rdzv.version, rdzv.to_dict)
        stats_json = self._cached("stats", stats.version, stats.to_dict)
        addr_json = self._cached("addresses", addresses_version, lambda: addresses)
        kv_json = self._cached("kv", kv.version, kv.to_dict)
        ds_json = self._cached(
            "datasets", len(registered), lambda: {n: dataset_json(d) for n, d in registered.items()}
        )
        members_json = self._cached("members", members.version, members.to_dict)
        head = json.dumps({"version": STATE_VERSION, "job": job, "shards": progress})
        return (
            f'{head[:-1]}, "rendezvous": {rdzv_json}, "stats": {stats_json}, '
            f'"addresses": {addr_json}, "kv": {kv_json}, "datasets": {ds_json}, '
            f'"members": {members_json}}}'
        )

    def _cached(self, key: str, version: int, build: Callable[[], object]) -> str:
        hit = self._cache.get(key)
        if hit is None or hit[0] != version:
            hit = (version, json.dumps(build()))
            self._cache[key] = hit
        return hit[1]


def with_generation(text: str, generation: int) -> str:
    """The snapshot ``text`` (a JSON object) saying which master generation wrote it
    (``master.state_file``: journals of older generations are not replayed over it)."""
    return f'{text[:-1]}, "generation": {generation}}}'


def saved_generation(data: dict[str, Any] | None) -> int:
    """The generation of the master that wrote snapshot ``data`` (0: none, or before them)."""
    return int(data.get("generation", 0)) if data else 0


def restore_snapshot(
    data: dict[str, Any],
    shards: dict[str, ShardManager],
    rdzv: Rendezvous,
    stats: StatsBook,
    addresses: dict[str, str],
    kv: KVStore,
    memberships: MemberBook,
) -> list[str]:
    """Load ``data`` into the given objects; returns the members of the restored world (a
    snapshot from before memberships were saved restores none)."""
    if data.get("version") != STATE_VERSION:
        raise ValueError(f"master state version must be {STATE_VERSION}, got {data.get('version')}")
    for name, saved in data["shards"].items():
        if name in shards:
            shards[name].restore(saved)
    r = data["rendezvous"]
    members = [str(m) for m in r["members"]]
    rdzv.restore(int(r["round"]), members, dict(r["ages"]))
    stats.restore(data["stats"])
    addresses.update(data.get("addresses", {}))
    kv.restore(data.get("kv", {}))
    if "members" in data:
        memberships.restore(data["members"])
    return members


def dataset_json(dataset: Dataset) -> dict[str, Any]:
    """A registered dataset as saved in the snapshot and the journal."""
    return asdict(dataset)


def dataset_from_json(data: dict[str, Any]) -> Dataset:
    return Dataset(**{**data, "files": tuple(data.get("files", ()))})
