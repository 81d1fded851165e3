"""The one entry point from text to model: ``load_job(text_or_path) -> ElasticJob``.

It parses YAML (a syntax error is a ``Problem`` with line and column), finds the job document,
detects its format by ``apiVersion``/``kind``, runs the right reader and ``api.validate``, and
raises ``SpecError`` with every problem. ``read_source`` is the only I/O in ``flexjob.api``:
it reads a file path handed to it.
"""

from pathlib import Path
from typing import Any

import yaml

from flexjob.api.job import ElasticJob
from flexjob.api.names import API_VERSION, KIND_JOB, KIND_SCALE_PLAN
from flexjob.api.problems import Problem, SpecError
from flexjob.api.readers import COMPANION_KINDS, convert, find_reader
from flexjob.api.scaleplan import ScalePlan
from flexjob.api.validate import validate

Source = str | Path
_SUFFIXES = (".yaml", ".yml", ".json")


def read_source(source: Source) -> str:
    """The text of ``source``: a ``Path``, a path string (one line naming a file, or ending in
    .yaml/.yml/.json), or the text itself. An unreadable file raises ``SpecError``."""
    if isinstance(source, str):
        one_line = "\n" not in source and len(source) < 4096
        named = one_line and (source.endswith(_SUFFIXES) or Path(source).is_file())
        if not named:
            return source
    try:
        return Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(
            [Problem("", str(source), f"cannot read {source}: {exc.strerror}")]
        ) from exc


def parse_documents(text: str) -> list[Any]:
    """The YAML (or JSON) documents of ``text``, empty documents left out."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise SpecError([Problem("", text, f"{where}YAML syntax error: {exc.problem}")]) from None
    except yaml.YAMLError as exc:
        raise SpecError([Problem("", text, f"YAML syntax error: {exc}")]) from None
    if not docs:
        raise SpecError([Problem("", text, "no document found")])
    return docs


def split_job(docs: list[Any]) -> tuple[Any, list[dict[str, Any]]]:
    """The one job document of a file and its companion documents (a DI ``AggregatorConfig``)."""
    companions = [d for d in docs if isinstance(d, dict) and d.get("kind") in COMPANION_KINDS]
    jobs = [d for d in docs if not (isinstance(d, dict) and d.get("kind") in COMPANION_KINDS)]
    if len(jobs) != 1:
        kinds = [d.get("kind") if isinstance(d, dict) else type(d).__name__ for d in jobs]
        raise SpecError([Problem("", kinds, f"expected one job document, found {len(jobs)}")])
    return jobs[0], companions


def check_documents(docs: list[Any]) -> list[Problem]:
    """Every problem of a file's documents (its job and its companions)."""
    try:
        job, companions = split_job(docs)
    except SpecError as exc:
        return exc.problems
    return validate(job, companions)


def to_native(raw: Any, companions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``raw`` as a valid native wire dict (``ElasticJob`` or ``ScalePlan``), converted by its
    reader if it is a foreign format. Raises ``SpecError`` with every problem."""
    problems = validate(raw, companions)
    if problems:
        raise SpecError(problems)
    if raw.get("apiVersion") == API_VERSION and raw.get("kind") in (KIND_JOB, KIND_SCALE_PLAN):
        return dict(raw)
    reader = find_reader(raw.get("apiVersion"), raw.get("kind"))
    assert reader is not None  # validate() found it
    converted, _ = convert(reader, dict(raw), companions)
    assert converted is not None
    return converted.native


def job_from_dict(raw: Any, companions: list[dict[str, Any]] | None = None) -> ElasticJob:
    """An ``ElasticJob`` from a parsed document of any supported job format."""
    native = to_native(raw, companions)
    if native.get("kind") != KIND_JOB:
        raise SpecError([Problem("kind", native.get("kind"), "expected a job, not a ScalePlan")])
    return ElasticJob.model_validate(native)


def load_job(source: Source) -> ElasticJob:
    """The ``ElasticJob`` in ``source`` (file path or YAML/JSON text), any supported format.

    Raises ``SpecError`` listing every problem."""
    job, companions = split_job(parse_documents(read_source(source)))
    return job_from_dict(job, companions)


def load_scale_plan(source: Source) -> ScalePlan:
    """The ``ScalePlan`` in ``source`` (file path or YAML/JSON text)."""
    raw, _ = split_job(parse_documents(read_source(source)))
    native = to_native(raw)
    if native.get("kind") != KIND_SCALE_PLAN:
        raise SpecError([Problem("kind", native.get("kind"), "expected a ScalePlan")])
    return ScalePlan.model_validate(native)


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None  # multi-line scripts stay readable
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(data: dict[str, Any]) -> str:
    """YAML text of a wire dict, keys in model order, no anchors."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False)
