"""Conversions between the PS wire (``ps.proto``) and Python: tensors as raw bytes + dtype +
shape (never pickle), the optimizer, table specs and the model declaration.

Decoding checks what the sender claims: a dtype outside ``DTYPES``, a shape whose size does
not match the bytes, or a bad optimizer or table option is an ``InvalidSpecError`` naming
the field. Not for transport (``ps_client`` / ``ps_server``).
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from flexjob.api.errors import InvalidSpecError
from flexjob.core.fields import build
from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec
from flexjob.core.ps.parameters import ModelSpec
from flexjob.core.ps.table import TableSpec
from flexjob.rpc.gen import ps_pb2 as pb
from flexjob.rpc.ps_messages import PsStats

#: dtypes a tensor may have on the wire (little-endian).
DTYPES: Mapping[str, np.dtype[np.generic]] = {
    "float32": np.dtype("<f4"),
    "int64": np.dtype("<i8"),
}


def tensor_to_pb(array: npt.ArrayLike) -> pb.Tensor:
    arr = np.asarray(array)
    name = arr.dtype.name
    if name not in DTYPES:
        raise InvalidSpecError(f"tensor dtype {name!r} is not one of {sorted(DTYPES)}")
    data = np.ascontiguousarray(arr, dtype=DTYPES[name]).tobytes()
    return pb.Tensor(dtype=name, shape=list(arr.shape), data=data)


def tensor_from_pb(msg: pb.Tensor, field: str, dtype: str | None = None) -> npt.NDArray[np.generic]:
    """The array in ``msg`` (read-only, no copy); ``dtype``: the one ``field`` must have."""
    if msg.dtype not in DTYPES:
        raise InvalidSpecError(f"{field}.dtype: {msg.dtype!r} is not one of {sorted(DTYPES)}")
    if dtype is not None and msg.dtype != dtype:
        raise InvalidSpecError(f"{field}.dtype: must be {dtype}, got {msg.dtype}")
    shape = tuple(int(d) for d in msg.shape)
    if any(d < 0 for d in shape):
        raise InvalidSpecError(f"{field}.shape: {list(shape)} has a negative dimension")
    kind = DTYPES[msg.dtype]
    count = math.prod(shape)  # Python ints: a hostile shape cannot wrap around int64
    if count * kind.itemsize != len(msg.data):
        raise InvalidSpecError(
            f"{field}: {len(msg.data)} bytes do not hold shape {list(shape)} of {msg.dtype}"
        )
    return np.frombuffer(msg.data, dtype=kind).reshape(shape)


def optimizer_to_pb(spec: OptimizerSpec) -> pb.Optimizer:
    return build(pb.Optimizer, spec, kind=spec.kind.value)


def optimizer_from_pb(msg: pb.Optimizer) -> OptimizerSpec:
    kinds = [k.value for k in OptimizerKind]
    if msg.kind not in kinds:
        raise InvalidSpecError(f"optimizer.kind: {msg.kind!r} is not one of {kinds}")
    try:
        return build(OptimizerSpec, msg, kind=OptimizerKind(msg.kind))
    except ValueError as exc:
        raise InvalidSpecError(f"optimizer: {exc}") from None


def table_to_pb(spec: TableSpec) -> pb.TableSpec:
    return build(pb.TableSpec, spec)


@dataclass(frozen=True, slots=True)
class Configure:
    """A decoded ``ConfigureRequest``."""

    model: ModelSpec
    num_ps: int


def configure_to_pb(model: ModelSpec, num_ps: int) -> pb.ConfigureRequest:
    return pb.ConfigureRequest(
        optimizer=optimizer_to_pb(model.optimizer),
        tables=[table_to_pb(t) for t in model.tables],
        dense={k: tensor_to_pb(v) for k, v in model.dense.items()},
        num_ps=num_ps,
    )


def configure_from_pb(msg: pb.ConfigureRequest) -> Configure:
    tables = tuple(build(TableSpec, t) for t in msg.tables)
    dense = {
        k: tensor_from_pb(v, f"dense[{k}]", "float32").astype(np.float32)
        for k, v in msg.dense.items()
    }
    return Configure(ModelSpec(optimizer_from_pb(msg.optimizer), tables, dense), msg.num_ps)


def stats_to_pb(s: PsStats) -> pb.StatsResponse:
    tables = [pb.TableStats(name=k, rows=r, bytes=b) for k, (r, b) in s.tables.items()]
    return build(pb.StatsResponse, s, tables=tables)


def stats_from_pb(msg: pb.StatsResponse) -> PsStats:
    return build(PsStats, msg, tables={t.name: (t.rows, t.bytes) for t in msg.tables})
