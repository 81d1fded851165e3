"""Job masters to SIGKILL many times in a row, each started in well under a second: forked
from a ``multiprocessing`` fork server that imported the master once (a fresh interpreter
takes seconds to import it on a loaded machine). Each is a real master process
(``master.main.run_master``) serving on the config's port until it is killed.
"""

import multiprocessing as mp
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess

from flexjob.core.training.master_config import MasterConfig

_CONTEXT: ForkServerContext | None = None


def _context() -> ForkServerContext:
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = mp.get_context("forkserver")
        _CONTEXT.set_forkserver_preload(["flexjob.master.main", "tests.support.crash_master"])
    return _CONTEXT


def _serve(config_json: str) -> None:
    from flexjob.master.main import run_master

    run_master(MasterConfig.from_json(config_json))


def start_master_process(config: MasterConfig) -> BaseProcess:
    """A master process for ``config`` (its ``port`` fixed, so clients keep one address);
    started, not yet serving (clients retry until it does)."""
    process = _context().Process(target=_serve, args=(config.to_json(),), daemon=True)
    process.start()
    return process
