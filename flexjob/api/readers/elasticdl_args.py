"""ElasticDL's job arguments (``jobArgs``) translated into flexjob's settings, one rule per
argument name, for an ElasticAIJob whose ``Master`` flexjob's master runs.

For: the ElasticDL reader (``api.readers.elasticdl``). A job that brings its own master image
gets its arguments on that master's command line untouched; this module is for the other
case, where no ElasticDL master exists to read them. Each argument is mapped to a native
field (``ARGUMENTS``: dataset, strategy, environment) or refused by name with the field that
says the same thing in flexjob; an argument ElasticDL does not have is refused naming the
known ones. ``docs/elasticdl.md`` holds the same table for users (a test keeps the two equal).
Not for the parsing of ``--name value`` strings (the reader) or validation of the result
(``api.validate``). No I/O.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flexjob.api import names
from flexjob.api.enums import DistributionStrategy
from flexjob.api.problems import Problem

#: What one mapped argument adds to the native spec: (wire path under ``spec``, value).
Setting = tuple[str, Any]
Translate = Callable[[str], list[Setting]]


@dataclass(frozen=True, slots=True)
class Argument:
    """One ElasticDL argument: ``translate`` (value → native settings; raises ``ValueError``
    with the reason for a value flexjob cannot honour), or ``None`` and ``refusal`` (why
    flexjob's master does not take it, and what to use instead)."""

    translate: Translate | None = None
    refusal: str = ""
    #: What the docs table says it becomes.
    becomes: str = ""


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(f"must be a whole number >= 1, got {value!r}")
    return number


def _flag(value: str) -> bool:
    if value not in {"True", "False", "true", "false"}:
        raise ValueError(f"must be True or False, got {value!r}")
    return value.lower() == "true"


def _grads_to_wait(value: str) -> list[Setting]:
    if _positive(value) != 1:
        raise ValueError(
            f"flexjob's parameter servers apply each gradient as it arrives (grads_to_wait 1), "
            f"got {value!r}"
        )
    return []


def _use_async(value: str) -> list[Setting]:
    _flag(value)  # True: asynchronous; False with grads_to_wait 1: each push applied at once
    return []


def _strategy(value: str) -> list[Setting]:
    allowed = (DistributionStrategy.PARAMETER_SERVER, DistributionStrategy.ALLREDUCE)
    if value not in {str(s) for s in allowed}:
        raise ValueError(f"must be one of {', '.join(allowed)}, got {value!r}")
    return [("distributionStrategy", value)]


def _envs(value: str) -> list[Setting]:
    pairs = [p for p in value.split(",") if p]
    bad = [p for p in pairs if "=" not in p or not p.split("=", 1)[0]]
    if bad:
        raise ValueError(f"must be 'NAME=value,NAME=value', got {value!r}")
    return [(f"envs.{k}", v) for k, v in (p.split("=", 1) for p in pairs)]


def _checkpoint_dir(value: str) -> list[Setting]:
    return [
        (f"envs.{names.ENV_CHECKPOINT_DIR}", value),
        (f"envs.{names.ENV_PS_CHECKPOINT_DIR}", value),
    ]


def _zero_only(what: str) -> Translate:
    def translate(value: str) -> list[Setting]:
        if value != "0":
            raise ValueError(f"{what}; 0 (off) is accepted, got {value!r}")
        return []

    return translate


_MODEL = (
    "it names what ElasticDL's own worker builds; flexjob's workers run their container's "
    "command: put it on spec.Worker's command line"
)
_FIELD = "the ElasticAIJob says it in its own fields: {field}"
_EVAL = (
    "flexjob's master runs no evaluation tasks: evaluate in the training script, or give this "
    "job a master image of its own"
)
_LOGS = "flexjob's processes log at INFO to the replica's log (`flexjob logs`)"
_PS_ONLY = "it tunes ElasticDL's own parameter server, which flexjob's `flexjob ps` replaces"

ARGUMENTS: Mapping[str, Argument] = {
    "training_data": Argument(
        lambda v: [("dataset.files", [v])],
        becomes="`spec.dataset.files: [VALUE]` (`NAME[:ROWS]`)",
    ),
    "num_epochs": Argument(
        lambda v: [("dataset.epochs", _positive(v))], becomes="`spec.dataset.epochs`"
    ),
    "minibatch_size": Argument(
        lambda v: [("dataset.shardSize", _positive(v))],
        becomes="`spec.dataset.shardSize` = minibatch_size * num_minibatches_per_task",
    ),
    "num_minibatches_per_task": Argument(
        lambda v: [("dataset.shardSize", _positive(v))],
        becomes="(the factor of `spec.dataset.shardSize`, above)",
    ),
    "distribution_strategy": Argument(_strategy, becomes="`spec.distributionStrategy`"),
    "envs": Argument(_envs, becomes="`spec.envs` (`NAME=value,...`)"),
    "checkpoint_dir": Argument(
        _checkpoint_dir,
        becomes=(
            f"`spec.envs`: `{names.ENV_CHECKPOINT_DIR}` (trainers) and "
            f"`{names.ENV_PS_CHECKPOINT_DIR}` (PS, unless the operator gives one)"
        ),
    ),
    "checkpoint_steps": Argument(
        _zero_only(
            f"flexjob checkpoints by time, not steps: set {names.ENV_PS_CHECKPOINT_INTERVAL} "
            "(seconds) in spec.envs"
        ),
        becomes="`0` only",
    ),
    "keep_checkpoint_max": Argument(
        _zero_only("flexjob keeps each replica's latest checkpoint only"), becomes="`0` only"
    ),
    "grads_to_wait": Argument(_grads_to_wait, becomes="`1` only (no setting)"),
    "use_async": Argument(_use_async, becomes="`True` or `False` (no setting)"),
    "validation_data": Argument(refusal=_EVAL),
    "evaluation_steps": Argument(refusal=_EVAL),
    "evaluation_start_delay_secs": Argument(refusal=_EVAL),
    "evaluation_throttle_secs": Argument(refusal=_EVAL),
    "eval_metrics_fn": Argument(refusal=_EVAL),
    **dict.fromkeys(
        (
            "model_zoo",
            "model_def",
            "model_params",
            "dataset_fn",
            "loss",
            "optimizer",
            "callbacks",
            "custom_data_reader",
            "data_reader_params",
            "output",
            "get_model_steps",
            "checkpoint_dir_for_init",
            "log_loss_steps",
        ),
        Argument(refusal=_MODEL),
    ),
    **{
        key: Argument(refusal=_FIELD.format(field=field))
        for key, field in (
            ("job_name", "metadata.name"),
            ("namespace", "metadata.namespace"),
            ("num_workers", "spec.Worker.replicas"),
            ("num_ps_pods", "spec.PS.replicas"),
            ("image_name", "the pod templates' image"),
            ("worker_image", "spec.Worker's image"),
            ("image_pull_policy", "the pod templates' imagePullPolicy"),
            ("restart_policy", "the pod templates' restartPolicy"),
            ("volume", "the pod templates' volumes"),
            ("cluster_spec", "the pod templates"),
            ("extra_pypi_index", "the images"),
            *(
                (f"{role}_{what}", f"spec.{alias}'s {field}")
                for role, alias in (("master", "Master"), ("worker", "Worker"), ("ps", "PS"))
                for what, field in (
                    ("resource_request", "resources.requests"),
                    ("resource_limit", "resources.limits"),
                    ("pod_priority", "priorityClassName"),
                )
            ),
        )
    },
    **dict.fromkeys(("log_level", "log_file_path", "tensorboard_log_dir"), Argument(refusal=_LOGS)),
    **dict.fromkeys(
        ("use_go_ps", "sync_version_tolerance", "lr_staleness_modulation", "aux_params"),
        Argument(refusal=_PS_ONLY),
    ),
}


def translate(
    args: Mapping[str, str], index: Mapping[str, int]
) -> tuple[dict[str, Any], list[Problem]]:
    """``args`` (name → value, in spec order; ``index``: each name's place in ``jobArgs``) as
    a partial native ``spec`` wire dict, and one problem per argument flexjob's master cannot
    take, at ``spec.jobArgs[i]``."""
    spec: dict[str, Any] = {}
    problems: list[Problem] = []
    for key, value in args.items():
        path = f"spec.jobArgs[{index[key]}]"
        argument = ARGUMENTS.get(key)
        if argument is None:
            known = ", ".join(sorted(ARGUMENTS))
            why = f"--{key} is not an ElasticDL argument flexjob knows (known: {known})"
            problems.append(Problem(path, f"--{key} {value}", why))
            continue
        if argument.translate is None:
            why = f"flexjob's master does not take --{key}: {argument.refusal}"
            problems.append(Problem(path, f"--{key} {value}", why))
            continue
        try:
            settings = argument.translate(value)
        except ValueError as exc:
            problems.append(Problem(path, f"--{key} {value}", f"--{key} {value}: {exc}"))
            continue
        for where, setting in settings:
            _put(spec, where, setting)
    problems += _dataset_problems(args, index, spec)
    return spec, problems


def _put(spec: dict[str, Any], where: str, value: Any) -> None:
    """Set ``spec[a][b] = value`` for ``where = "a.b"``; a second shard size multiplies the
    first (minibatch_size * num_minibatches_per_task)."""
    head, _, leaf = where.rpartition(".")
    node = spec.setdefault(head, {}) if head else spec
    if leaf == "shardSize" and leaf in node:
        value = node[leaf] * value
    node[leaf] = value


def _dataset_problems(
    args: Mapping[str, str], index: Mapping[str, int], spec: dict[str, Any]
) -> list[Problem]:
    """Dataset arguments shape the dataset ``--training_data`` names; without it there is none
    for flexjob's master to shard."""
    dataset = spec.get("dataset")
    if dataset is None or "files" in dataset:
        return []
    key = next(k for k in args if k in {"num_epochs", "minibatch_size", "num_minibatches_per_task"})
    why = (
        f"--{key} shapes the dataset flexjob's master shards, and there is none: add "
        "--training_data, or let the training script register its dataset"
    )
    return [Problem(f"spec.jobArgs[{index[key]}]", f"--{key} {args[key]}", why)]
