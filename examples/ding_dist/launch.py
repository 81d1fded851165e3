"""DI-engine 0.5.3's own ``ding -m dist`` pipeline, one role per call, as a DIJob's commands.

Run with a Python that has DI-engine 0.5.3 (not a flexjob dependency; docs/di-engine.md shows
the throwaway environment). What it works around, all DI-engine's own (shown with its own
launcher, without flexjob, in docs/di-engine.md):

* ``ding -m dist --module ...`` reads ``-c`` with ``read_config`` before choosing the module,
  so no dist module starts from the command line: this calls the entry functions of
  ``ding.entry.dist_entry`` that the command would call.
* A collect task's first train sample is compressed with ``lz4``, which di-engine does not
  install (only its ``test`` extra names it); without it the compressor calls ``sys.exit(1)``
  in the collector's thread, which ends silently: the collector keeps answering the
  coordinator, the task never ends, the replay buffer stays empty. Evaluator tasks do not
  compress, so they run. A collector here refuses to start without ``lz4``, saying so.
* The collector creates ``path_data`` with ``os.mkdir`` (no parents) and ignores a failure,
  so with the configs' ``./<exp_name>/data`` its first sample fails (``Parent directory
  ./<exp_name>/data does not exist``) in the same thread. Every role here creates
  ``path_data`` and ``path_policy`` with their parents first.
* Once an evaluation reaches the stop value the coordinator closes and ``dist_launch_coordinator``
  returns, but its process does not end (a non-daemon thread waits on a collector task that
  never ends): here the coordinator exits 0 then, so the job Succeeds.
* The coordinator's shutdown flag is overwritten by the next collector task that ends after
  the converging evaluation, so it may never close: here the flag, once set, stays set.

  python launch.py config OUT.pkl [--source CFG.py] [--stop-value V]   # the k8s-platform config
  python launch.py coordinator|learner|collector OUT.pkl

``--source`` defaults to DI-engine's own ``cartpole_dqn_config_k8s.py`` (dizoo).
"""

import argparse
import os
import pickle
import sys
from pathlib import Path
from typing import Any

ROLES = ("config", "coordinator", "learner", "collector")
SOURCE = "classic_control/cartpole/config/parallel/cartpole_dqn_config_k8s.py"


def default_source() -> str:
    import dizoo

    return str(Path(dizoo.__file__).parent / SOURCE)


def prepare(source: str, out: str, seed: int, stop_value: float | None) -> None:
    """DI's own ``dist_prepare_config`` for the k8s platform, without ``system_addr`` so that
    the coordinator asks the server in ``KUBERNETES_SERVER_URL`` (what flexjob sets)."""
    from ding.config import compile_config_parallel, read_config_with_system

    main, create, system = read_config_with_system(source)
    system.coordinator.get("operator_server", {}).pop("system_addr", None)
    if stop_value is not None:
        main.env.stop_value = stop_value
    config = compile_config_parallel(
        main, create_cfg=create, system_cfg=system, seed=seed, platform="k8s", save_cfg=False
    )
    Path(out).write_bytes(pickle.dumps(config))


def make_paths(config: Any) -> None:
    for key in ("path_data", "path_policy"):
        for section in ("learner", "collector"):
            path = config.system.get(section, {}).get(key)
            if path:
                os.makedirs(path, exist_ok=True)


def sticky_shutdown() -> None:
    """DI's coordinator sets its shutdown flag to what each ended collector task says, so a
    task ending after the converging evaluation clears it and the coordinator never closes:
    once set, it stays set here."""
    from ding.worker.coordinator.coordinator import Coordinator

    finish = Coordinator.deal_with_collector_finish_task

    def sticky(self: Any, task_id: str, finished_task: dict) -> None:
        converged = self._system_shutdown_flag
        finish(self, task_id, finished_task)
        self._system_shutdown_flag = converged or self._system_shutdown_flag

    Coordinator.deal_with_collector_finish_task = sticky


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=ROLES)
    parser.add_argument("pkl", help="the compiled config (written by config, read by the roles)")
    parser.add_argument("--source", help="config: DI-engine config file (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stop-value", type=float, default=None)
    args = parser.parse_args(argv)
    if args.role == "config":
        prepare(args.source or default_source(), args.pkl, args.seed, args.stop_value)
        return 0
    filename = args.pkl
    make_paths(pickle.loads(Path(filename).read_bytes()))
    from ding.entry import dist_entry

    if args.role == "coordinator":  # its port from COORDINATOR_PORT
        sticky_shutdown()
        dist_entry.dist_launch_coordinator(filename, args.seed, None, True, enable_total_log=True)
        # It returns once converged, but the process would not end: its collector-task thread
        # waits on a task its closed interaction never ends (and tensorboardX's writer thread).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    elif args.role == "learner":  # its port from LEARNER_PORT
        dist_entry.dist_launch_learner(filename, args.seed, None, "learner")
    else:  # its port from COLLECTOR_PORT
        try:
            import lz4.block  # noqa: F401
        except ImportError:
            print(
                "collector: DI-engine's collector compresses with lz4: pip install lz4",
                file=sys.stderr,
            )
            return 2
        dist_entry.dist_launch_collector(filename, args.seed, None, "collector")
    return 0


if __name__ == "__main__":
    sys.exit(main())
