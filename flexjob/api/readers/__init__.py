"""Readers that turn other projects' job formats into a flexjob ``ElasticJob`` wire dict:
DI Orchestrator v1/v2 ``DIJob``, ElasticDL ``ElasticAIJob``, DLRover ``ElasticJob`` and Kubeflow
``PyTorchJob`` and ``TFJob``. ``find_reader`` picks one by ``apiVersion`` and ``kind``.
"""

from typing import Any

from flexjob.api.problems import Problem, SpecError
from flexjob.api.readers import dijob, dlrover, elasticdl, pytorchjob, tfjob
from flexjob.api.readers.common import Converted, Reader

READERS: tuple[Reader, ...] = (
    *dijob.READERS,
    *elasticdl.READERS,
    *dlrover.READERS,
    *pytorchjob.READERS,
    *tfjob.READERS,
)

#: Documents that travel with a job in the same file (not jobs themselves).
COMPANION_KINDS = frozenset({dijob.KIND_AGGREGATOR_CONFIG})


def find_reader(api_version: Any, kind: Any) -> Reader | None:
    return next((r for r in READERS if r.reads(api_version, kind)), None)


def convert(
    reader: Reader, raw: dict[str, Any], companions: list[dict[str, Any]] | None = None
) -> tuple[Converted | None, list[Problem]]:
    """The converted document, or ``None`` and the problems in the source format's paths."""
    try:
        return reader.convert(raw, companions or []), []
    except SpecError as exc:
        return None, exc.problems


__all__ = ["COMPANION_KINDS", "READERS", "Converted", "Reader", "convert", "find_reader"]
