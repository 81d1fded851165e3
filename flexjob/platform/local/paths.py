"""Where the local platform keeps its files: ``$FLEXJOB_HOME`` (default ``~/.flexjob``).

``flexjob.sqlite`` holds the job store; ``jobs/<namespace>/<name>/logs/<type>-<index>.log``
holds each replica's output. Only path arithmetic here.
"""

import os
from pathlib import Path

from flexjob.api.names import ENV_HOME

DB_FILE = "flexjob.sqlite"


def flexjob_home(home: Path | str | None = None) -> Path:
    """The root directory: ``home`` if given, else ``$FLEXJOB_HOME``, else ``~/.flexjob``."""
    if home is not None:
        return Path(home)
    env = os.environ.get(ENV_HOME)
    return Path(env) if env else Path.home() / ".flexjob"


def database_path(home: Path) -> Path:
    return home / DB_FILE


def job_dir(home: Path, namespace: str, job: str) -> Path:
    return home / "jobs" / namespace / job


def log_path(home: Path, namespace: str, job: str, short_name: str) -> Path:
    return job_dir(home, namespace, job) / "logs" / f"{short_name}.log"
