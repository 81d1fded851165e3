"""A master process once its config is known: ``serve_until_stopped`` (what ``flexjob master``
runs after parsing its options) and ``python -m flexjob.master.process CONFIG_FILE`` (the
masters ``spawn_master`` starts for ``flexjob run`` and tests: the ``MasterConfig`` JSON file
as is). That entry loads no CLI: typer, its per-option pydantic coercion and the config file
reader cost a master about 0.15 CPU-s of start-up that competes with the workers' imports.
Exits without tearing the interpreter down (``exit_now``). Not for users (``flexjob master``).
"""

import atexit
import logging
import os
import sys
from pathlib import Path
from typing import NoReturn

from flexjob.core.training.master_config import MasterConfig
from flexjob.observe import log_lines

#: Exit code of a master whose state file is there but cannot be read (nothing is served).
EXIT_STATE_LOST = 3
#: Exit code of a master whose job state another master holds (``master.state_lock``).
EXIT_STATE_HELD = 4


def command(config_path: Path) -> list[str]:
    """The command line of a master process serving the config in ``config_path``."""
    return [sys.executable, "-m", "flexjob.master.process", str(config_path)]


def configure_logging() -> None:
    log_lines.configure(logging.INFO, "%(asctime)s %(levelname)s %(name)s %(message)s")


def confine_to_cpu(cpu: int | None) -> None:
    """Run every thread of this process, and those it starts, on CPU ``cpu`` only
    (``MasterConfig.cpu``; None: leave them be). ``ValueError`` names the CPUs allowed when
    ``cpu`` is not one this process may use. Both entries run it before the master starts
    (``flexjob master`` and ``main``): it is the whole process's."""
    if cpu is None:
        return
    allowed = sorted(os.sched_getaffinity(0))
    if cpu not in allowed:
        raise ValueError(f"cpu must be one of the CPUs this process may use {allowed}, got {cpu}")
    try:
        threads = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]
    for tid in threads:
        os.sched_setaffinity(tid, {cpu})
    logging.getLogger(__name__).info("event=master_confined cpu=%d", cpu)


def serve_until_stopped(config: MasterConfig) -> int:
    """Run the master until a stop signal; 0, or ``EXIT_STATE_LOST`` (with the error on
    stderr) when its state file cannot be read, ``EXIT_STATE_HELD`` when another master holds
    it. ``rpc.auth.InsecureBindError`` is the caller's."""
    from flexjob.master.main import run_master
    from flexjob.master.state_file import StateLostError
    from flexjob.master.state_lock import MasterLockedError

    try:
        return run_master(config)
    except StateLostError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return EXIT_STATE_LOST
    except MasterLockedError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return EXIT_STATE_HELD


def exit_now(code: int) -> NoReturn:
    """Exit without tearing down the interpreter: the master saved its state and closed its
    server, and unloading the modules of a large process takes seconds that ``flexjob run``
    waits for. Exit handlers still run and output is flushed."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: list[str]) -> NoReturn:
    from flexjob.rpc.auth import InsecureBindError

    configure_logging()
    config = MasterConfig.from_json(Path(argv[0]).read_text())
    try:
        confine_to_cpu(config.cpu)  # before the master starts its threads
        code = serve_until_stopped(config)
    except (InsecureBindError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        code = 2
    exit_now(code)


if __name__ == "__main__":
    main(sys.argv[1:])
