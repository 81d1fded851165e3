"""Validation of job specs: every problem at once, each naming the field path, the bad value
and what is allowed.

``validate(raw)`` accepts a native ``ElasticJob`` or ``ScalePlan`` dict, or any format a reader
in ``api.readers`` knows (its problems are then named in that format's own paths). Type
and enum errors come from the pydantic models; the cross-field rules live here. Replica counts
are checked on the typed model, once it parses, by the rule that runs them (``api.bounds``,
``api.roles``): a count that cannot run (no replica that trains, a job master's rendezvous
that would wait for 0 nodes) is refused here, naming its spec path, not at reconcile. The same
function backs the validating admission webhook. No I/O.
"""

import difflib
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from flexjob.api.bounds import replica_bounds
from flexjob.api.brain_service import brain_url
from flexjob.api.di_tasks import task_problems
from flexjob.api.enums import DistributionStrategy, ReplicaType
from flexjob.api.job import ElasticJob, ReplicaSpec
from flexjob.api.limits import MAX_REPLICAS_BY_PLATFORM
from flexjob.api.master_rule import flexjob_runs_master, master_field_problems
from flexjob.api.model_errors import problems_from
from flexjob.api.name_rules import is_dns1123_label, name_problem
from flexjob.api.names import API_VERSION, KIND_JOB, KIND_SCALE_PLAN
from flexjob.api.problems import MISSING, Problem, join_path, one_of
from flexjob.api.quantity import parse_quantity
from flexjob.api.readers import READERS, convert, find_reader
from flexjob.api.readers.dijob import aggregator_record_problems
from flexjob.api.roles import TRAINING_TYPES, main_training_type, on_request_types
from flexjob.api.scaleplan import ScalePlan
from flexjob.api.unsupported import unsupported_fields, unsupported_plan_fields

_JOB_ARG_KEY = re.compile(r"^[a-z0-9_]+$")
_REPLICA_TYPES = frozenset(str(t) for t in ReplicaType)
_NATIVE: dict[str, type[BaseModel]] = {KIND_JOB: ElasticJob, KIND_SCALE_PLAN: ScalePlan}


def validate(raw: Any, companions: list[dict[str, Any]] | None = None) -> list[Problem]:
    """Every problem of the document ``raw`` (a parsed YAML/JSON object); ``[]`` when valid.

    ``companions`` are the other documents of the same file (a DI v1 ``AggregatorConfig``)."""
    if not isinstance(raw, Mapping):
        return [Problem("", raw, f"a job spec is a mapping, got {type(raw).__name__}")]
    api_version, kind = raw.get("apiVersion", MISSING), raw.get("kind", MISSING)
    if api_version == API_VERSION and kind in _NATIVE:
        return _validate_native(dict(raw), _NATIVE[kind])
    reader = find_reader(api_version, kind)
    if reader is None:
        return _unknown_format(api_version, kind)
    converted, problems = convert(reader, dict(raw), companions)
    if converted is None:
        return problems
    # Two native paths may stand for one of the source's (the first of several DI v2 tasks of a
    # type is also its type's template): each problem once.
    return _dedupe(converted.to_source(_validate_native(converted.native, ElasticJob)))


def _unknown_format(api_version: Any, kind: Any) -> list[Problem]:
    kinds = sorted({KIND_JOB, KIND_SCALE_PLAN} | {r.kind for r in READERS})
    if kind not in kinds:
        return [Problem("kind", kind, one_of(kind, kinds))]
    versions = [API_VERSION] if kind in _NATIVE else []
    versions += [v for r in READERS if r.kind == kind for v in r.api_versions]
    message = f"for kind {kind}: {one_of(api_version, versions)}"
    return [Problem("apiVersion", api_version, message)]


def _validate_native(raw: dict[str, Any], model: type[BaseModel]) -> list[Problem]:
    try:
        parsed = model.model_validate(raw)
        problems: list[Problem] = []
        if isinstance(parsed, ElasticJob):
            problems += master_field_problems(parsed)
            problems += aggregator_record_problems(parsed)
            problems += _check_counts(parsed)
            problems += task_problems(parsed)
    except ValidationError as exc:
        problems = problems_from(exc, model)
    problems += _check_metadata(raw.get("metadata"))
    spec = raw.get("spec")
    if isinstance(spec, Mapping):
        if model is ElasticJob:
            problems += _check_job_spec(spec)
        else:
            problems += _check_plan_spec(spec)
    return _dedupe(problems)


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[str] = set()
    out = []
    for p in problems:
        if p.path not in seen or not p.path:
            seen.add(p.path)
            out.append(p)
    return out


def _check_name(path: str, name: Any) -> Iterator[Problem]:
    if name is MISSING or name == "":
        yield Problem(path, name, "a name is required")
    elif isinstance(name, str) and (problem := name_problem(name)):
        yield Problem(path, name, problem)


def _check_metadata(meta: Any) -> list[Problem]:
    if not isinstance(meta, Mapping):
        return [Problem("metadata", meta if meta is not None else MISSING, "metadata is required")]
    name = meta.get("name", MISSING)
    prefix = meta.get("generateName")
    if name in (MISSING, "") and isinstance(prefix, str) and prefix:
        # the API server appends 5 random characters to generateName
        problems = []
        if not is_dns1123_label(prefix + "x" * 5):
            problems.append(
                Problem(
                    "metadata.generateName",
                    prefix,
                    f"{prefix!r} does not start a DNS-1123 label (lower-case letters, digits "
                    "and '-', starting with a letter or digit, at most 58 characters)",
                )
            )
    else:
        problems = list(_check_name("metadata.name", name))
    if "namespace" in meta:
        problems += _check_name("metadata.namespace", meta["namespace"])
    return problems


def _check_job_spec(spec: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    replica_specs = spec.get("replicaSpecs", {})
    if isinstance(replica_specs, Mapping):
        if not any(k in {str(t) for t in TRAINING_TYPES} for k in replica_specs):
            allowed = ", ".join(sorted(TRAINING_TYPES))
            problems.append(
                Problem(
                    "spec.replicaSpecs",
                    sorted(replica_specs),
                    f"a job needs replicas that train: at least one of {allowed}",
                )
            )
        for rtype, rspec in replica_specs.items():
            template = rspec.get("template", {}) if isinstance(rspec, Mapping) else None
            if isinstance(template, Mapping) and rtype in _REPLICA_TYPES:
                path = f"spec.replicaSpecs.{rtype}.template"
                problems += _check_pod_template(path, template)
            tasks = rspec.get("tasks") if isinstance(rspec, Mapping) else None
            for k, task in enumerate(tasks if isinstance(tasks, list) else []):
                template = task.get("template", {}) if isinstance(task, Mapping) else None
                if isinstance(template, Mapping):
                    path = f"spec.replicaSpecs.{rtype}.tasks[{k}].template"
                    problems += _check_pod_template(path, template)
    limits = spec.get("resourceLimits")
    if isinstance(limits, Mapping):
        problems += _check_quantities("spec.resourceLimits", limits)
    args = spec.get("jobArgs")
    if isinstance(args, Mapping):
        problems += _check_job_args(args)
        if args and isinstance(replica_specs, Mapping) and "master" not in replica_specs:
            problems.append(
                Problem(
                    "spec.jobArgs",
                    dict(args),
                    "job arguments go to the command line of the job's own master: declare "
                    "spec.replicaSpecs.master (its command, or its image's entrypoint, gets "
                    "them), or remove spec.jobArgs (flexjob's own master does not support them)",
                )
            )
    brain = spec.get("brainService")
    if isinstance(brain, str):
        try:
            brain_url(brain)
        except ValueError as exc:
            problems.append(Problem("spec.brainService", brain, str(exc)))
    problems += unsupported_fields(spec)
    if isinstance(replica_specs, Mapping):
        problems += _check_strategy(spec.get("distributionStrategy"), replica_specs)
    batch = spec.get("batch")
    if isinstance(batch, Mapping):
        problems += _check_batch(batch)
    dataset = spec.get("dataset")
    if isinstance(dataset, Mapping) and (dataset.get("size") is None) == (not dataset.get("files")):
        problems.append(
            Problem(
                "spec.dataset",
                dict(dataset),
                "give exactly one of spec.dataset.size (samples) or spec.dataset.files",
            )
        )
    return problems


def _check_strategy(strategy: Any, replica_specs: Mapping[str, Any]) -> list[Problem]:
    """``distributionStrategy`` names what the replicas do; nothing else reads it, so a
    strategy the replicas contradict would be a field that says one thing and does another."""
    has_ps = str(ReplicaType.PS) in replica_specs
    path = "spec.distributionStrategy"
    if strategy == DistributionStrategy.PARAMETER_SERVER and not has_ps:
        message = (
            "ParameterServerStrategy needs parameter servers: add spec.replicaSpecs.ps, or use "
            "AllreduceStrategy (what a job without ps replicas runs)"
        )
        return [Problem(path, strategy, message)]
    if strategy == DistributionStrategy.ALLREDUCE and has_ps:
        message = (
            "a job with spec.replicaSpecs.ps runs parameter servers: use "
            "ParameterServerStrategy, or remove the ps replicas"
        )
        return [Problem(path, strategy, message)]
    return []


def _check_batch(batch: Mapping[str, Any]) -> list[Problem]:
    """Bounds of the (adaptive) global batch: ``spec.batch``."""
    base, micro, top = (
        _int_or_none(batch.get(k))
        for k in ("globalBatchSize", "microBatchSize", "maxGlobalBatchSize")
    )
    workers = _int_or_none(batch.get("maxWorkers"))
    problems: list[Problem] = []
    if base is None and workers is None:
        problems.append(
            Problem("spec.batch", dict(batch), "give globalBatchSize or maxWorkers (or both)")
        )
    elif micro is None and (base is None or workers is None) and "microBatchSize" not in batch:
        problems.append(
            Problem(
                "spec.batch.microBatchSize",
                MISSING,
                "required unless globalBatchSize and maxWorkers are both given (then it is "
                "globalBatchSize / maxWorkers)",
            )
        )
    if base is not None and micro is not None and micro >= 1 and base % micro:
        problems.append(
            Problem(
                "spec.batch.globalBatchSize",
                base,
                f"must be a multiple of spec.batch.microBatchSize ({micro})",
            )
        )
    if batch.get("adaptive") is True:
        for key, value in (("globalBatchSize", base), ("maxGlobalBatchSize", top)):
            if value is None:
                problems.append(
                    Problem(
                        f"spec.batch.{key}",
                        batch.get(key, MISSING),
                        "an adaptive batch needs globalBatchSize and maxGlobalBatchSize",
                    )
                )
    if base is not None and top is not None and top < base:
        problems.append(
            Problem(
                "spec.batch.maxGlobalBatchSize",
                top,
                f"must be >= spec.batch.globalBatchSize ({base})",
            )
        )
    return problems


def _check_counts(job: ElasticJob) -> list[Problem]:
    """The replica counts of the typed ``job``: each type's bounds, its trainers, and its job
    master's rendezvous."""
    problems: list[Problem] = []
    for rtype, spec in job.spec.replica_specs.items():
        problems += _check_bounds(f"spec.replicaSpecs.{rtype}", spec)
    trainers = _check_trainers(job)
    return problems + (trainers or _check_rendezvous(job))


def _check_bounds(path: str, spec: ReplicaSpec) -> list[Problem]:
    """``minReplicas <= replicas <= maxReplicas``, as far as ``spec`` sets them."""
    count, low, high = spec.replicas, spec.min_replicas, spec.max_replicas
    if low is not None and high is not None and low > high:
        return [Problem(f"{path}.minReplicas", low, f"{low} is above {path}.maxReplicas ({high})")]
    problems = []
    if count is not None and low is not None and count < low:
        problems.append(
            Problem(f"{path}.replicas", count, f"{count} is below {path}.minReplicas ({low})")
        )
    if count is not None and high is not None and count > high:
        problems.append(
            Problem(f"{path}.replicas", count, f"{count} is above {path}.maxReplicas ({high})")
        )
    return problems


def _check_trainers(job: ElasticJob) -> list[Problem]:
    """Zero replicas of every type that trains leaves nothing to train (and a job master
    with no node to wait for): each such ``replicas: 0`` is a problem. Not in a job a DI
    coordinator drives: its trainers start at 0 and come as it asks (``api.roles``)."""
    specs = job.spec.replica_specs
    on_request = on_request_types(specs)
    trainers = [t for t in specs if t in TRAINING_TYPES and t not in on_request]
    if not trainers or any(specs[t].replicas != 0 for t in trainers):
        return []
    return [
        Problem(
            f"spec.replicaSpecs.{t}.replicas",
            0,
            "0 leaves the job with no replica that trains: give at least 1",
        )
        for t in trainers
    ]


def _check_rendezvous(job: ElasticJob) -> list[Problem]:
    """flexjob's job master forms its worlds of the job's main training type
    (``api.roles.main_training_type``), waiting for at least its smallest count
    (``api.bounds``) of nodes: 0 would be a world of nobody."""
    specs = job.spec.replica_specs
    trainer = main_training_type(specs)
    if trainer is None or trainer in on_request_types(specs) or not flexjob_runs_master(job):
        return []
    spec = specs[trainer]
    low = replica_bounds(spec).min
    if low >= 1:
        return []
    key = "minReplicas" if spec.min_replicas is not None else "replicas"
    return [
        Problem(
            f"spec.replicaSpecs.{trainer}.{key}",
            low,
            f"must be >= 1: flexjob's job master waits for at least this many {trainer} "
            "replicas before it starts a world (its rendezvous), and 0 would start none",
        )
    ]


def platform_problems(job: ElasticJob, platform: str) -> list[Problem]:
    """What ``platform`` cannot run: a replica type whose largest count (``api.bounds``) is
    above the platform's bound (``api.limits.MAX_REPLICAS_BY_PLATFORM``)."""
    most = MAX_REPLICAS_BY_PLATFORM.get(platform)
    if most is None:
        return []
    problems = []
    for rtype, spec in job.spec.replica_specs.items():
        largest = replica_bounds(spec).max
        if largest > most:
            key = "maxReplicas" if spec.max_replicas is not None else "replicas"
            problems.append(
                Problem(
                    f"spec.replicaSpecs.{rtype}.{key}",
                    largest,
                    f"{largest} is above the maximum {most} on the {platform} platform",
                )
            )
    return problems


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _check_pod_template(path: str, template: Mapping[str, Any]) -> list[Problem]:
    pod = template.get("spec", {})
    if not isinstance(pod, Mapping):
        return []
    containers = pod.get("containers", MISSING)
    cpath = f"{path}.spec.containers"
    if containers is MISSING or containers == []:
        hint = _misspelled(pod, "containers")
        return [Problem(cpath, containers, f"a replica needs at least one container{hint}")]
    if not isinstance(containers, list):
        return []
    problems: list[Problem] = []
    for i, container in enumerate(containers):
        if not isinstance(container, Mapping):
            continue
        ipath = join_path(cpath, i)
        image = container.get("image", MISSING)
        if image is MISSING or image is None or (isinstance(image, str) and not image.strip()):
            hint = _misspelled(container, "image")
            problems.append(Problem(f"{ipath}.image", image, f"a container needs an image{hint}"))
        resources = container.get("resources", {})
        if isinstance(resources, Mapping):
            for part in ("requests", "limits"):
                values = resources.get(part, {})
                if isinstance(values, Mapping):
                    problems += _check_quantities(f"{ipath}.resources.{part}", values)
    return problems


def _misspelled(obj: Mapping[str, Any], wanted: str) -> str:
    """``"; is 'imagee' a misspelling of 'image'?"`` when a key of ``obj`` is close."""
    keys = [k for k in obj if isinstance(k, str) and k != wanted]
    close = difflib.get_close_matches(wanted, keys, n=1, cutoff=0.7)
    return f"; is {close[0]!r} a misspelling of {wanted!r}?" if close else ""


def _check_quantities(path: str, values: Mapping[str, Any]) -> list[Problem]:
    problems = []
    for name, value in values.items():
        try:
            parse_quantity(value)
        except ValueError as exc:
            problems.append(Problem(join_path(path, str(name)), value, str(exc)))
    return problems


def _check_job_args(args: Mapping[str, Any]) -> list[Problem]:
    problems = []
    for key, value in args.items():
        path = join_path("spec.jobArgs", str(key))
        if not isinstance(key, str) or not _JOB_ARG_KEY.match(key):
            problems.append(
                Problem(path, key, f"{key!r} is not an argument name (lower-case, digits, '_')")
            )
        elif isinstance(value, str) and (not value.strip() or "\n" in value):
            problems.append(Problem(path, value, "an argument value is one non-empty line"))
    return problems


def _check_plan_spec(spec: Mapping[str, Any]) -> list[Problem]:
    owner = spec.get("ownerJob", MISSING)
    problems = [] if owner is MISSING else list(_check_name("spec.ownerJob", owner))
    return problems + unsupported_plan_fields(spec)
