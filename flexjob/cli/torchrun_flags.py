"""torchrun's flags on ``flexjob run`` / ``flexjob agent``: values parsed as torchrun parses them,
and the flags flexjob does not take rejected by name (never run as the script).

Accepted with both spellings (``--nproc-per-node`` / ``--nproc_per_node``): ``--nnodes``,
``--nproc-per-node``, ``--standalone``, ``--rdzv-backend``, ``--rdzv-endpoint``, ``--rdzv-id``,
``--rdzv-conf``, ``--node-rank``, ``--max-restarts``, ``--monitor-interval``, ``--log-dir``,
``-r/--redirects``, ``-t/--tee``, ``--run-path``, ``-m/--module``. Not for running anything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from flexjob.agent.config import agent_default
from flexjob.api.roles import DEFAULT_TYPE

#: ``--rdzv-backend`` values: flexjob's master is the rendezvous; ``c10d`` (torchrun's default
#: for multi-node) means the same here, with ``--rdzv-endpoint`` naming the flexjob master.
RDZV_BACKENDS = ("flexjob", "c10d")
#: ``--rdzv-conf`` keys flexjob uses (seconds).
RDZV_CONF_KEYS = ("join_timeout", "last_call_timeout")

#: torchrun flags flexjob does not take, and what to do instead.
REJECTED = {
    "--no-python": "flexjob runs SCRIPT with Python (or -m MODULE); wrap other programs in one",
    "--master-addr": "that is torchrun's static rendezvous; give --rdzv-endpoint HOST:PORT of "
    "a flexjob master instead",
    "--master-port": "that is torchrun's static rendezvous; give --rdzv-endpoint HOST:PORT of "
    "a flexjob master instead",
    "--start-method": "workers are always started as fresh processes (spawn)",
    "--role": f"every flexjob node runs the role {DEFAULT_TYPE.value!r}",
    "--local-addr": "give --address on flexjob agent (the host other nodes reach)",
    "--local-ranks-filter": "every rank's output is shown, marked [node/rankN]",
    "--logs-specs": "use --log-dir, --redirects and --tee",
}


def _canonical(flag: str) -> str:
    name = flag.split("=", 1)[0]
    return "--" + name.lstrip("-").replace("_", "-") if name.startswith("--") else name


def option_problem(script: str) -> str | None:
    """Why ``script`` (the first word that is not a known option) is an option, not a
    script: torchrun flags flexjob does not take are named with what to do instead."""
    if not script.startswith("-") or script == "-":
        return None
    flag = _canonical(script)
    if flag in REJECTED:
        return f"{flag} is not supported by flexjob: {REJECTED[flag]}"
    return f"no such option: {script.split('=', 1)[0]} (see --help for the options)"


def parse_nproc(text: str) -> int:
    """torchrun's ``--nproc-per-node``: a number, ``cpu`` (CPU count), ``gpu`` (CUDA devices,
    which must exist) or ``auto`` (GPUs if any, else CPUs)."""
    if text.isdigit() and int(text) >= 1:
        return int(text)
    if text in ("cpu", "auto", "gpu"):
        gpus = _cuda_devices() if text != "cpu" else 0
        if text == "gpu" and gpus == 0:
            raise ValueError("--nproc-per-node gpu: no CUDA device is visible")
        return gpus or (os.cpu_count() or 1)
    raise ValueError(f"--nproc-per-node must be a number >= 1, cpu, gpu or auto; got {text!r}")


def _cuda_devices() -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip()])
    import torch  # only for gpu/auto: the slow import

    return int(torch.cuda.device_count())


def check_backend(backend: str) -> str:
    if backend not in RDZV_BACKENDS:
        raise ValueError(
            f"--rdzv-backend must be one of {', '.join(RDZV_BACKENDS)} (the flexjob master is "
            f"the rendezvous); got {backend!r}"
        )
    return backend


@dataclass(frozen=True, slots=True)
class RdzvConf:
    join_timeout: float = agent_default("rendezvous_timeout")
    last_call_timeout: float | None = None


def parse_rdzv_conf(text: str) -> RdzvConf:
    """``join_timeout=600,last_call_timeout=2`` → RdzvConf; other keys are named as errors."""
    values: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in RDZV_CONF_KEYS:
            raise ValueError(
                f"--rdzv-conf: {item!r} is not KEY=SECONDS with KEY one of "
                f"{', '.join(RDZV_CONF_KEYS)}"
            )
        try:
            values[key] = float(value)
        except ValueError:
            raise ValueError(f"--rdzv-conf: {key} must be a number, got {value!r}") from None
        if values[key] <= 0:
            raise ValueError(f"--rdzv-conf: {key} must be > 0, got {value!r}")
    return RdzvConf(**values)
