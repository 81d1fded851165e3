from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Tensor(_message.Message):
    __slots__ = ("dtype", "shape", "data")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    dtype: str
    shape: _containers.RepeatedScalarFieldContainer[int]
    data: bytes
    def __init__(self, dtype: _Optional[str] = ..., shape: _Optional[_Iterable[int]] = ..., data: _Optional[bytes] = ...) -> None: ...

class Optimizer(_message.Message):
    __slots__ = ("kind", "lr", "momentum", "initial_accumulator_value", "beta1", "beta2", "eps")
    KIND_FIELD_NUMBER: _ClassVar[int]
    LR_FIELD_NUMBER: _ClassVar[int]
    MOMENTUM_FIELD_NUMBER: _ClassVar[int]
    INITIAL_ACCUMULATOR_VALUE_FIELD_NUMBER: _ClassVar[int]
    BETA1_FIELD_NUMBER: _ClassVar[int]
    BETA2_FIELD_NUMBER: _ClassVar[int]
    EPS_FIELD_NUMBER: _ClassVar[int]
    kind: str
    lr: float
    momentum: float
    initial_accumulator_value: float
    beta1: float
    beta2: float
    eps: float
    def __init__(self, kind: _Optional[str] = ..., lr: _Optional[float] = ..., momentum: _Optional[float] = ..., initial_accumulator_value: _Optional[float] = ..., beta1: _Optional[float] = ..., beta2: _Optional[float] = ..., eps: _Optional[float] = ...) -> None: ...

class TableSpec(_message.Message):
    __slots__ = ("name", "dim", "num_rows", "init_scale", "seed")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DIM_FIELD_NUMBER: _ClassVar[int]
    NUM_ROWS_FIELD_NUMBER: _ClassVar[int]
    INIT_SCALE_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    name: str
    dim: int
    num_rows: int
    init_scale: float
    seed: int
    def __init__(self, name: _Optional[str] = ..., dim: _Optional[int] = ..., num_rows: _Optional[int] = ..., init_scale: _Optional[float] = ..., seed: _Optional[int] = ...) -> None: ...

class ConfigureRequest(_message.Message):
    __slots__ = ("optimizer", "tables", "dense", "num_ps")
    class DenseEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Tensor
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Tensor, _Mapping]] = ...) -> None: ...
    OPTIMIZER_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    DENSE_FIELD_NUMBER: _ClassVar[int]
    NUM_PS_FIELD_NUMBER: _ClassVar[int]
    optimizer: Optimizer
    tables: _containers.RepeatedCompositeFieldContainer[TableSpec]
    dense: _containers.MessageMap[str, Tensor]
    num_ps: int
    def __init__(self, optimizer: _Optional[_Union[Optimizer, _Mapping]] = ..., tables: _Optional[_Iterable[_Union[TableSpec, _Mapping]]] = ..., dense: _Optional[_Mapping[str, Tensor]] = ..., num_ps: _Optional[int] = ...) -> None: ...

class ConfigureResponse(_message.Message):
    __slots__ = ("version", "created")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    version: int
    created: bool
    def __init__(self, version: _Optional[int] = ..., created: _Optional[bool] = ...) -> None: ...

class PullDenseRequest(_message.Message):
    __slots__ = ("known_version",)
    KNOWN_VERSION_FIELD_NUMBER: _ClassVar[int]
    known_version: int
    def __init__(self, known_version: _Optional[int] = ...) -> None: ...

class PullDenseResponse(_message.Message):
    __slots__ = ("version", "params")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Tensor
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Tensor, _Mapping]] = ...) -> None: ...
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    version: int
    params: _containers.MessageMap[str, Tensor]
    def __init__(self, version: _Optional[int] = ..., params: _Optional[_Mapping[str, Tensor]] = ...) -> None: ...

class PushDenseRequest(_message.Message):
    __slots__ = ("grads", "base_version")
    class GradsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Tensor
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Tensor, _Mapping]] = ...) -> None: ...
    GRADS_FIELD_NUMBER: _ClassVar[int]
    BASE_VERSION_FIELD_NUMBER: _ClassVar[int]
    grads: _containers.MessageMap[str, Tensor]
    base_version: int
    def __init__(self, grads: _Optional[_Mapping[str, Tensor]] = ..., base_version: _Optional[int] = ...) -> None: ...

class PushDenseResponse(_message.Message):
    __slots__ = ("version",)
    VERSION_FIELD_NUMBER: _ClassVar[int]
    version: int
    def __init__(self, version: _Optional[int] = ...) -> None: ...

class LookupRequest(_message.Message):
    __slots__ = ("table", "ids")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    table: str
    ids: Tensor
    def __init__(self, table: _Optional[str] = ..., ids: _Optional[_Union[Tensor, _Mapping]] = ...) -> None: ...

class LookupResponse(_message.Message):
    __slots__ = ("rows",)
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: Tensor
    def __init__(self, rows: _Optional[_Union[Tensor, _Mapping]] = ...) -> None: ...

class PushRowsRequest(_message.Message):
    __slots__ = ("table", "ids", "grads")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    GRADS_FIELD_NUMBER: _ClassVar[int]
    table: str
    ids: Tensor
    grads: Tensor
    def __init__(self, table: _Optional[str] = ..., ids: _Optional[_Union[Tensor, _Mapping]] = ..., grads: _Optional[_Union[Tensor, _Mapping]] = ...) -> None: ...

class PushRowsResponse(_message.Message):
    __slots__ = ("rows_updated",)
    ROWS_UPDATED_FIELD_NUMBER: _ClassVar[int]
    rows_updated: int
    def __init__(self, rows_updated: _Optional[int] = ...) -> None: ...

class PushLookupRequest(_message.Message):
    __slots__ = ("table", "push_ids", "grads", "lookup_ids")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    PUSH_IDS_FIELD_NUMBER: _ClassVar[int]
    GRADS_FIELD_NUMBER: _ClassVar[int]
    LOOKUP_IDS_FIELD_NUMBER: _ClassVar[int]
    table: str
    push_ids: Tensor
    grads: Tensor
    lookup_ids: Tensor
    def __init__(self, table: _Optional[str] = ..., push_ids: _Optional[_Union[Tensor, _Mapping]] = ..., grads: _Optional[_Union[Tensor, _Mapping]] = ..., lookup_ids: _Optional[_Union[Tensor, _Mapping]] = ...) -> None: ...

class PushLookupResponse(_message.Message):
    __slots__ = ("rows_updated", "rows")
    ROWS_UPDATED_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows_updated: int
    rows: Tensor
    def __init__(self, rows_updated: _Optional[int] = ..., rows: _Optional[_Union[Tensor, _Mapping]] = ...) -> None: ...

class StatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TableStats(_message.Message):
    __slots__ = ("name", "rows", "bytes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    rows: int
    bytes: int
    def __init__(self, name: _Optional[str] = ..., rows: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...

class StatsResponse(_message.Message):
    __slots__ = ("rows", "bytes", "requests", "requests_per_second", "cpu_percent", "memory_bytes", "version", "tables", "index", "num_ps")
    ROWS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    CPU_PERCENT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    NUM_PS_FIELD_NUMBER: _ClassVar[int]
    rows: int
    bytes: int
    requests: int
    requests_per_second: float
    cpu_percent: float
    memory_bytes: int
    version: int
    tables: _containers.RepeatedCompositeFieldContainer[TableStats]
    index: int
    num_ps: int
    def __init__(self, rows: _Optional[int] = ..., bytes: _Optional[int] = ..., requests: _Optional[int] = ..., requests_per_second: _Optional[float] = ..., cpu_percent: _Optional[float] = ..., memory_bytes: _Optional[int] = ..., version: _Optional[int] = ..., tables: _Optional[_Iterable[_Union[TableStats, _Mapping]]] = ..., index: _Optional[int] = ..., num_ps: _Optional[int] = ...) -> None: ...
