"""An agent process once its options are known: ``run_node`` (what ``flexjob agent`` runs
after parsing its command line) and ``python -m flexjob.agent.process CONFIG`` (each agent
``flexjob run`` starts or restarts: ``command`` puts its ``AgentConfig`` in JSON on the command
line). That entry loads no CLI: typer and its per-option pydantic coercion cost an agent about
0.15 CPU-s before it could start its workers, which under CPU contention delays every first
step. Not for users (``flexjob agent`` is theirs).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from flexjob.agent import spare as spares
from flexjob.agent.config import AgentConfig
from flexjob.agent.target import EXIT_NOT_FOUND, target_problem
from flexjob.observe import log_lines

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def configure_logging(verbose: bool) -> None:
    log_lines.configure(logging.INFO if verbose else logging.WARNING, LOG_FORMAT)


def command(config: AgentConfig) -> list[str]:
    """The command line of an agent process that runs ``config``'s node."""
    return [sys.executable, "-m", "flexjob.agent.process", json.dumps(config.to_dict())]


def run_node(config: AgentConfig, spare_dir: Path) -> int:
    """Run ``config``'s node to its end and return its exit code: a warm spare in
    ``spare_dir`` runs it when one fits; else this process starts its workers (their torch
    import begins before the agent loads gRPC and the rest) and runs the agent."""
    code = spares.hand_to_spare(config, spare_dir)
    if code is not None:
        return code
    from flexjob.agent.workers import start_first_workers

    first = start_first_workers(config)
    from flexjob.agent.agent import ElasticAgent

    return ElasticAgent(config, first=first).run()


def main(argv: list[str]) -> int:
    configure_logging(verbose=False)
    config = AgentConfig.from_dict(json.loads(argv[0]))
    problem = target_problem(config.target, config.module)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr, flush=True)
        return EXIT_NOT_FOUND
    return run_node(config, spares.spare_dir())


if __name__ == "__main__":
    from flexjob.platform.fast_exit import exit_now

    exit_now(main(sys.argv[1:]))  # done: no interpreter teardown between its end and its exit
