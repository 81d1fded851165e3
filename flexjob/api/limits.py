"""Upper bounds on every count and size a user or a client can set: one owner for each bound.

Specs are checked against them by the models (``api.job``) and ``platform_problems``; the
master checks registered datasets and KV values against them, the HTTP services their request
bodies. A bound exists so that a typo or a hostile client gets a clear error instead of a
frozen master or a machine out of memory. Pure data and checks, no I/O.
"""

import json
from collections.abc import Mapping
from typing import Any

from flexjob.api.errors import InvalidSpecError

#: Replicas of one type, by platform: one machine runs a few hundred processes at most.
MAX_REPLICAS_BY_PLATFORM: Mapping[str, int] = {"local": 256, "kubernetes": 10_000}
#: The bound the models enforce whatever the platform (the largest one).
MAX_REPLICAS = max(MAX_REPLICAS_BY_PLATFORM.values())
#: Training processes per node (``nProcPerNode``).
MAX_PROCS_PER_NODE = 1024
#: Samples of one dataset (a shuffled epoch is a permutation of this many indices).
MAX_DATASET_SAMPLES = 100_000_000
#: Shards of one dataset per epoch (each is a queue entry in the master).
MAX_SHARDS_PER_EPOCH = 1_000_000
#: Epochs of one dataset.
MAX_EPOCHS = 100_000
#: Samples of one global batch or micro-batch, and workers of a batch plan.
MAX_BATCH = 10_000_000
#: Restarts, retries and seconds (backoffLimit, restartCount, deadlines): about 30 years.
MAX_COUNT = 1_000_000_000
#: Bytes of one key and of one value in the master's KV store.
MAX_KV_KEY_BYTES = 1024
MAX_KV_VALUE_BYTES = 1024 * 1024
#: Keys of one job's KV store, and the bytes of all its keys and values together (the store is
#: in the master's memory and in every snapshot; the job's own keys use a few kilobytes).
MAX_KV_KEYS = 10_000
MAX_KV_TOTAL_BYTES = 16 * 1024 * 1024
#: Datasets one job's master shards (declared and registered; each is a queue in the master).
MAX_DATASETS = 256
#: A job's merged ``status.profilings``: its JSON size and how deeply it may nest (it is a
#: small table of step times, read by the Allocator).
MAX_PROFILINGS_BYTES = 256 * 1024
MAX_PROFILINGS_DEPTH = 16
#: The job's torch TCPStore (``master.tcp_store``): bytes of one key and one value, keys one
#: query may name, and the bytes of the whole store (gloo's rendezvous keys are small).
MAX_STORE_KEY_BYTES = 4096
MAX_STORE_VALUE_BYTES = 64 * 1024 * 1024
MAX_STORE_QUERY_KEYS = 65_536
MAX_STORE_TOTAL_BYTES = 512 * 1024 * 1024
#: Connections the job's TCPStore serves at once (one thread each): every agent and training
#: process holds one or two, so this is a job of thousands of processes; past it a new
#: connection is closed at once, and those already served are not disturbed.
MAX_STORE_CLIENTS = 16_384
#: ``KVAdd`` values are 64-bit signed integers on the wire.
KV_INT_MIN, KV_INT_MAX = -(2**63), 2**63 - 1
#: Shards one ``LeaseShards`` call may lease, and reports it may carry.
MAX_SHARD_LEASE = 1024
#: Bytes of one HTTP request body (server and brain): profilings and reports are small.
MAX_HTTP_BODY_BYTES = 4 * 1024 * 1024


def json_depth_problem(field: str, value: object, limit: int) -> str | None:
    """Why ``value`` (parsed JSON) nests deeper than ``limit`` levels, naming ``field``, or
    None. Iterative: a hostile document cannot exhaust the stack of the check itself."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return f"{field}: nested more than {limit} levels deep"
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return None


def profilings_from_json(field: str, raw: bytes) -> dict[str, Any]:
    """The profilings document ``raw`` (what the trainers publish under
    ``names.KV_PROFILINGS``): a JSON object of at most ``MAX_PROFILINGS_BYTES`` nesting at
    most ``MAX_PROFILINGS_DEPTH`` levels; else ``InvalidSpecError`` naming ``field``. The
    size is checked before the parse, so the parse cannot exhaust memory or the stack."""
    if len(raw) > MAX_PROFILINGS_BYTES:
        raise InvalidSpecError(
            f"{field}: {len(raw)} bytes of profilings, at most {MAX_PROFILINGS_BYTES}"
        )
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InvalidSpecError(f"{field}: profilings are not JSON ({type(exc).__name__})") from None
    if not isinstance(doc, dict):
        raise InvalidSpecError(
            f"{field}: profilings must be a JSON object, not {type(doc).__name__}"
        )
    problem = json_depth_problem(field, doc, MAX_PROFILINGS_DEPTH)
    if problem:
        raise InvalidSpecError(problem)
    return doc


def check_merged_profilings(field: str, merged: object) -> None:
    """Refuse a job's merged ``status.profilings`` (what a post or a copy would leave: each
    merges into what earlier ones left) larger than ``MAX_PROFILINGS_BYTES`` of JSON,
    naming ``field`` (what would have merged it)."""
    size = len(json.dumps(merged, separators=(",", ":")))
    if size > MAX_PROFILINGS_BYTES:
        raise InvalidSpecError(
            f"{field}: status.profilings would be {size} bytes of JSON, "
            f"at most {MAX_PROFILINGS_BYTES}"
        )


def dataset_problem(size: int, shard_size: int, epochs: int) -> str | None:
    """Why a dataset of ``size`` samples in shards of ``shard_size`` over ``epochs`` epochs is
    refused (too large for the master to track), or None."""
    if not 1 <= size <= MAX_DATASET_SAMPLES:
        return f"size {size} is outside 1..{MAX_DATASET_SAMPLES} samples"
    if shard_size < 1:
        return f"shard size {shard_size} is below 1"
    if -(-size // shard_size) > MAX_SHARDS_PER_EPOCH:
        return (
            f"{size} samples in shards of {shard_size} make more than {MAX_SHARDS_PER_EPOCH} "
            "shards per epoch; use larger shards"
        )
    if not 1 <= epochs <= MAX_EPOCHS:
        return f"epochs {epochs} is outside 1..{MAX_EPOCHS}"
    return None
