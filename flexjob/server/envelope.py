"""The JSON envelope of every response, as DI Orchestrator's server writes it.

``{"success": bool, "code": int, "message": str, "data": ...}``: ``code`` is 0 on success and
the HTTP status on error. For: both API versions and the error handlers. Not for ``/metrics``.
"""

from typing import Generic, TypeVar

from pydantic import BaseModel

T = TypeVar("T")


class Envelope(BaseModel, Generic[T]):
    success: bool = True
    code: int = 0
    message: str = ""
    data: T | None = None


def ok(data: T, message: str = "") -> Envelope[T]:
    return Envelope[T](success=True, code=0, message=message, data=data)
