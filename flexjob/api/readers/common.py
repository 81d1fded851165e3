"""What every reader shares: parsing a foreign document into its own pydantic model (so its
problems carry that format's field paths) and building the native ``ElasticJob`` wire dict.

Not for format detection (``api.readers``) or validation of the result (``api.validate``).
"""

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field, ValidationError

from flexjob.api.base import ApiModel
from flexjob.api.job import ElasticJob, ElasticJobSpec
from flexjob.api.meta import ObjectMeta
from flexjob.api.model_errors import problems_from
from flexjob.api.problems import Problem, SpecError

M = TypeVar("M", bound=BaseModel)
S = TypeVar("S", bound=BaseModel)


class ForeignObject(ApiModel, Generic[S]):
    """A foreign job object whose ``spec`` is its reader's model ``S``; its ``apiVersion`` and
    ``kind`` are the ones its ``Reader`` reads (``Reader.reads`` chose the reader by them)."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    #: Run-time state of the source object; not part of the spec, dropped.
    status: dict[str, Any] | None = None
    api_version: str
    kind: str
    spec: S


@dataclass(frozen=True, slots=True)
class Converted:
    """A reader's result: the native wire dict, and where its fields came from in the source
    (native path prefix → source path prefix), so problems can name the user's own fields."""

    native: dict[str, Any]
    paths: dict[str, str] = field(default_factory=dict)

    def source_path(self, path: str) -> str:
        """``path`` (native) as the source document spells it; longest known prefix wins."""
        for prefix in sorted(self.paths, key=len, reverse=True):
            if path == prefix or path.startswith((prefix + ".", prefix + "[")):
                return self.paths[prefix] + path[len(prefix) :]
        return path

    def to_source(self, problems: list[Problem]) -> list[Problem]:
        return [replace(p, path=self.source_path(p.path)) for p in problems]


#: A reader: the document and its companion documents (same file) → native wire dict.
Convert = Callable[[dict[str, Any], list[dict[str, Any]]], Converted]


@dataclass(frozen=True, slots=True)
class Reader:
    """One foreign job format: which ``apiVersion``s and ``kind`` it reads, and how."""

    title: str
    kind: str
    api_versions: tuple[str, ...]
    convert: Convert

    def reads(self, api_version: Any, kind: Any) -> bool:
        return kind == self.kind and api_version in self.api_versions


def parse(model: type[M], raw: dict[str, Any], base: str = "") -> M:
    """``model.model_validate(raw)``; a bad document raises ``SpecError`` with its paths."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(problems_from(exc, model, base)) from None


def native_job(
    metadata: ObjectMeta, spec: ElasticJobSpec, paths: dict[str, str] | None = None
) -> Converted:
    return Converted(ElasticJob(metadata=metadata, spec=spec).to_wire(), paths or {})
