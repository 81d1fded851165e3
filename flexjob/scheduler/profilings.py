"""What the Allocator reads from ``status.profilings``: step-time samples for the goodput model.

For: turning the free-form profilings a job reports (``POST /v2alpha1/{job_id}/profilings``)
into ``core.training.goodput_model`` inputs. Keys it understands (others are ignored)::

    {
      "steps": [                       # measured mean seconds per training step
        {"replicas": 2, "nodes": 1, "localBatch": 32, "stepTime": 0.21},
        ...
      ],
      "localBatch": 32,                # samples per replica per step (default 32)
      "gradNoiseScale": 800.0          # gradient noise scale in samples (optional)
    }

Not for: storing profilings (the server merges them) or fitting (``goodput_model``).
"""

import logging
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from flexjob.core.allocator import GoodputModel, StepSample
from flexjob.core.training.goodput_model import fit_throughput

log = logging.getLogger(__name__)


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class StepReport(_Wire):
    replicas: int = Field(ge=1)
    nodes: int = Field(1, ge=1)
    local_batch: float | None = Field(None, gt=0)
    step_time: float = Field(gt=0)


class Profilings(_Wire):
    steps: list[StepReport] = Field(default_factory=list)
    local_batch: float = Field(32.0, gt=0)
    grad_noise_scale: float | None = Field(None, ge=0)


def read_profilings(data: Mapping[str, Any]) -> Profilings:
    """The parts of ``data`` the Allocator understands; bad entries are dropped with a log line."""
    steps = []
    for raw in data.get("steps") or []:
        try:
            steps.append(StepReport.model_validate(raw))
        except ValidationError as exc:
            log.warning("ignoring profiling step %r: %s", raw, exc.errors()[0]["msg"])
    rest = {k: v for k, v in data.items() if k != "steps"}
    try:
        base = Profilings.model_validate(rest)
    except ValidationError as exc:
        log.warning("ignoring profilings fields: %s", exc.errors()[0]["msg"])
        base = Profilings()
    return base.model_copy(update={"steps": steps})


def goodput_model(data: Mapping[str, Any]) -> GoodputModel:
    """The job's goodput model fitted from its profilings (prior terms where data is missing)."""
    prof = read_profilings(data)
    samples = [
        StepSample(s.nodes, s.replicas, s.local_batch or prof.local_batch, s.step_time)
        for s in prof.steps
    ]
    return GoodputModel(fit_throughput(samples), prof.local_batch, prof.grad_noise_scale)
