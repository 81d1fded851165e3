from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PauseRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PauseResponse(_message.Message):
    __slots__ = ("in_flight_waited",)
    IN_FLIGHT_WAITED_FIELD_NUMBER: _ClassVar[int]
    in_flight_waited: int
    def __init__(self, in_flight_waited: _Optional[int] = ...) -> None: ...

class Totals(_message.Message):
    __slots__ = ("rows", "id_sum", "value_sum")
    ROWS_FIELD_NUMBER: _ClassVar[int]
    ID_SUM_FIELD_NUMBER: _ClassVar[int]
    VALUE_SUM_FIELD_NUMBER: _ClassVar[int]
    rows: int
    id_sum: int
    value_sum: float
    def __init__(self, rows: _Optional[int] = ..., id_sum: _Optional[int] = ..., value_sum: _Optional[float] = ...) -> None: ...

class CheckpointRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CheckpointResponse(_message.Message):
    __slots__ = ("path", "version", "totals")
    PATH_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    path: str
    version: int
    totals: Totals
    def __init__(self, path: _Optional[str] = ..., version: _Optional[int] = ..., totals: _Optional[_Union[Totals, _Mapping]] = ...) -> None: ...

class LoadRequest(_message.Message):
    __slots__ = ("index", "num_ps", "from_num_ps", "set_version")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    NUM_PS_FIELD_NUMBER: _ClassVar[int]
    FROM_NUM_PS_FIELD_NUMBER: _ClassVar[int]
    SET_VERSION_FIELD_NUMBER: _ClassVar[int]
    index: int
    num_ps: int
    from_num_ps: int
    set_version: int
    def __init__(self, index: _Optional[int] = ..., num_ps: _Optional[int] = ..., from_num_ps: _Optional[int] = ..., set_version: _Optional[int] = ...) -> None: ...

class LoadResponse(_message.Message):
    __slots__ = ("totals",)
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    totals: Totals
    def __init__(self, totals: _Optional[_Union[Totals, _Mapping]] = ...) -> None: ...

class ResumeRequest(_message.Message):
    __slots__ = ("set_version",)
    SET_VERSION_FIELD_NUMBER: _ClassVar[int]
    set_version: int
    def __init__(self, set_version: _Optional[int] = ...) -> None: ...

class ResumeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
