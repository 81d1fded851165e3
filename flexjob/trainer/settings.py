"""The settings of a training process: one typed object read from its environment.

``TrainerSettings`` is the table of every variable the trainer helpers read: each field names
its variable (the string is owned by ``api.names``, which the writers — the operator,
``flexjob run``, the agent — use too), its type, its value when unset or empty, who sets it and
what it means. ``docs/architecture.md`` ("The trainer's settings") shows ``markdown_table()``;
``tests/trainer/test_settings.py`` checks the doc against it, and that no other trainer module
reads ``os.environ``.

``TrainerSettings.from_env(env)`` is the one reader. ``TrainerSettings.current()`` is this
process's: ``from_env(os.environ)``, parsed once and kept while the table's variables keep
their values. The trainer itself rewrites the world's variables (``RANK``, ``FLEXJOB_ROUND``,
... after each re-form, ``trainer.world.world_env``; torch's NCCL settings,
``trainer.breaker``), and a test may set a variable between two calls: the next ``current()``
then parses the new values. Code that wants other settings passes a
``TrainerSettings.from_env(mapping)`` of its own — every helper that reads one takes it.

Not for: what the values mean to each helper (``trainer.world``, ``trainer.lease``, ...) or the
variables of other processes (``api.names``).
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from flexjob.api import names

#: The values a variable may have: text, a whole number, seconds, or a ``1`` flag.
EnvValue = str | int | float | bool

AGENT = "agent"
OPERATOR = "operator, `flexjob run`"
USER = "user"
TRAINER = "agent; the trainer after each re-form"


def _env(name: str, default: EnvValue | None, set_by: str, meaning: str) -> Any:
    """A settings field read from the variable ``name`` (``default`` when unset or empty)."""
    return dataclasses.field(
        default=default, metadata={"env": name, "set_by": set_by, "meaning": meaning}
    )


@dataclass(frozen=True, slots=True)
class TrainerSettings:
    """A training process's settings, one field per environment variable."""

    # Who this process is (trainer.world.NodeIdentity).
    master: str | None = _env(names.ENV_MASTER, None, OPERATOR, "the job master's address")
    node_id: str | None = _env(
        names.ENV_NODE_ID,
        None,
        AGENT,
        "the node this process belongs to (unset: `<type>-<index>` for a replica's only "
        "trainer, else `local-<pid>`)",
    )
    replica_type: str | None = _env(
        names.ENV_REPLICA_TYPE, None, OPERATOR, "its type (unset: worker)"
    )
    replica_index: int = _env(names.ENV_REPLICA_INDEX, 0, OPERATOR, "its replica index")
    local_rank: int = _env(names.ENV_LOCAL_RANK, 0, AGENT, "its rank within the node")
    local_world_size: int = _env(names.ENV_LOCAL_WORLD_SIZE, 1, AGENT, "processes of the node")
    incarnation: int = _env(
        names.ENV_INCARNATION,
        0,
        AGENT,
        "the node's membership with the master when the agent started this process; its "
        "calls carry it, and the master refuses them once that membership is fenced "
        "(unset: 0, not said)",
    )
    # The world it starts in (trainer.world.Generation) and its ranks there.
    rank: int | None = _env(names.ENV_RANK, None, TRAINER, "its rank (unset: 0; status: -1)")
    world_size: int = _env(names.ENV_WORLD_SIZE, 1, TRAINER, "processes of the world")
    node_rank: int | None = _env(
        names.ENV_NODE_RANK,
        None,
        TRAINER,
        "the node's rank in the world (unset: rank / local world size)",
    )
    num_nodes: int | None = _env(
        names.ENV_NUM_NODES,
        None,
        TRAINER,
        "nodes of the world (unset: world size / local world size)",
    )
    round: int | None = _env(
        names.ENV_ROUND,
        None,
        TRAINER,
        "the rendezvous round the process starts in (unset: it asks the master for a world)",
    )
    store_address: str | None = _env(names.ENV_STORE_ADDRESS, None, TRAINER, "that round's store")
    store_prefix: str = _env(names.ENV_STORE_PREFIX, "", TRAINER, "that round's store prefix")
    restart_count: int = _env(
        names.ENV_TORCHELASTIC_RESTART_COUNT,
        0,
        TRAINER,
        "restarts and re-forms of the node's worker group before this world",
    )
    # What the agent hands each process.
    checkpoint_dir: str | None = _env(
        names.ENV_CHECKPOINT_DIR,
        None,
        "agent (unless set)",
        "where checkpoints go unless the script says",
    )
    collective_timeout_s: float | None = _env(
        names.ENV_COLLECTIVE_TIMEOUT,
        None,
        "agent (unless set)",
        "seconds a collective waits for a peer (unset: the trainer's `timeout_s`)",
    )
    status_file: str | None = _env(
        names.ENV_STATUS_FILE, None, AGENT, "where it publishes progress"
    )
    flash_fd: str | None = _env(
        names.ENV_FLASH_FD,
        None,
        AGENT,
        "the socket a worker notes its flash saves on (a descriptor number)",
    )
    flash_shm_dir: str | None = _env(
        names.ENV_FLASH_SHM_DIR, None, AGENT, "its shared-memory directory"
    )
    # Knobs a user (or `flexjob run`) sets.
    backend: str | None = _env(
        names.ENV_BACKEND,
        None,
        USER,
        "`gloo` or `nccl` (unset: nccl on a CUDA device, gloo on the CPU)",
    )
    shard_lease: str | None = _env(
        names.ENV_SHARD_LEASE,
        None,
        USER,
        "shards leased per call: `auto` or 1..1024 (unset: `auto` for "
        "`ElasticDistributedSampler`, 1 for `ElasticSampler`)",
    )
    batch_replan_s: str | None = _env(
        names.ENV_BATCH_REPLAN_S,
        None,
        USER,
        "seconds > 0 between re-plans of an adaptive global batch (unset: 30)",
    )
    flash_checkpoint: str | None = _env(
        names.ENV_FLASH_CHECKPOINT, None, USER, "`1`/`0`: flash checkpoints on or off (unset: off)"
    )
    preflight: bool = _env(
        names.ENV_PREFLIGHT,
        False,
        "user, `flexjob run --preflight`",
        "`1`: every new world runs the pre-flight check",
    )
    # Parameter-server jobs (trainer.ps_set).
    ps_addresses: str = _env(
        names.ENV_PS_ADDRESSES, "", OPERATOR, "the PS addresses in PS-index order, comma-separated"
    )
    num_ps: str = _env(names.ENV_NUM_PS, "", OPERATOR, "the size of the PS set")
    # torch's own (trainer.breaker).
    nccl_async_error_handling: str | None = _env(
        names.ENV_NCCL_ASYNC_ERROR_HANDLING,
        None,
        "user; the trainer (unless set)",
        "torch's NCCL error handling: 1 or 3 end the process, so it cannot re-form in place",
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TrainerSettings:
        """The settings ``env`` gives (a variable unset or empty takes its field's default); a
        number that is none raises ``ValueError`` naming the variable."""
        values: dict[str, Any] = {row.field: row.parse(env.get(row.name)) for row in table()}
        return cls(**values)

    @classmethod
    def current(cls) -> TrainerSettings:
        """This process's settings (``from_env(os.environ)``, parsed again only after one of the
        table's variables changed)."""
        return _parsed(tuple(os.environ.get(row.name) for row in table()))


def current_or(given: TrainerSettings | None) -> TrainerSettings:
    """``given``, else this process's settings (the default of every helper that reads one)."""
    return given if given is not None else TrainerSettings.current()


@dataclass(frozen=True, slots=True)
class TrainerEnvVar:
    """One row of the table: a variable and the settings field it fills."""

    name: str
    field: str
    type: type[EnvValue]
    #: The value when the variable is unset or empty; None: the field is None then.
    default: EnvValue | None
    set_by: str
    meaning: str

    def parse(self, raw: str | None) -> EnvValue | None:
        """The field's value for the variable given as ``raw`` (None: unset)."""
        if raw is None or raw == "":
            return self.default
        if self.type is bool:
            return raw == "1"
        if self.type is int or self.type is float:
            try:
                return self.type(raw)
            except ValueError as exc:
                kind = "an integer" if self.type is int else "a number"
                raise ValueError(f"environment variable {self.name}={raw!r} is not {kind}") from exc
        return raw


@lru_cache(maxsize=1)
def table() -> tuple[TrainerEnvVar, ...]:
    """The rows of ``TrainerSettings``, in field order."""
    hints = typing.get_type_hints(TrainerSettings)
    return tuple(
        TrainerEnvVar(
            f.metadata["env"],
            f.name,
            _value_type(hints[f.name]),
            f.default,  # type: ignore[arg-type]
            f.metadata["set_by"],
            f.metadata["meaning"],
        )
        for f in dataclasses.fields(TrainerSettings)
    )


def _value_type(hint: Any) -> type[EnvValue]:
    """``int`` of ``int | None``."""
    if isinstance(hint, types.UnionType):
        hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
    if hint not in (str, int, float, bool):
        raise TypeError(f"a trainer setting is str, int, float or bool, not {hint!r}")
    value_type: type[EnvValue] = hint
    return value_type


def markdown_table() -> str:
    """The table as ``docs/architecture.md`` shows it."""
    lines = [
        "| variable | field | type | unset | set by | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for row in table():
        unset = "None" if row.default is None else f"`{row.default!r}`"
        lines.append(
            f"| `{row.name}` | `{row.field}` | {row.type.__name__} | {unset} | {row.set_by} "
            f"| {row.meaning} |"
        )
    return "\n".join(lines)


@lru_cache(maxsize=4)
def _parsed(values: tuple[str | None, ...]) -> TrainerSettings:
    rows = table()
    return TrainerSettings.from_env(
        {row.name: value for row, value in zip(rows, values, strict=True) if value is not None}
    )
