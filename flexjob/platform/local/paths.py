"""Where the local platform keeps its files: ``$FLEXJOB_HOME`` (default ``~/.flexjob``).

``flexjob.sqlite`` holds the job store; ``jobs/<namespace>/<name>/logs/<type>-<index>.log``
holds each replica's output. Every path built from a name stays inside the home: each name
must be one path part (``api.name_rules``), else ``InvalidSpecError`` naming it; ``is_inside``
checks a path that is about to be removed against symbolic links too. The one owner of where
the home is (the brain's default database lives there as well). Only path arithmetic here.
"""

import os
from pathlib import Path

from flexjob.api.name_rules import check_path_part
from flexjob.api.names import DEFAULT_HOME, ENV_HOME

DB_FILE = "flexjob.sqlite"


def flexjob_home(home: Path | str | None = None) -> Path:
    """The root directory: ``home`` if given, else ``$FLEXJOB_HOME``, else ``~/.flexjob``
    (``names.DEFAULT_HOME``)."""
    if home is not None:
        return Path(home)
    env = os.environ.get(ENV_HOME)
    return Path(env) if env else Path(DEFAULT_HOME).expanduser()


def database_path(home: Path) -> Path:
    return home / DB_FILE


def jobs_root(home: Path) -> Path:
    """The folder of every job's files (its replicas' logs; its implicit master's state)."""
    return home / "jobs"


def job_dir(home: Path, namespace: str, job: str) -> Path:
    return jobs_root(home) / check_path_part("namespace", namespace) / check_path_part("job", job)


def log_path(home: Path, namespace: str, job: str, short_name: str) -> Path:
    name = check_path_part("replica", short_name)
    return job_dir(home, namespace, job) / "logs" / f"{name}.log"


def is_inside(home: Path, path: Path) -> bool:
    """Whether ``path`` lies strictly inside ``home`` once symbolic links are followed (and is
    not itself one). For what is about to be removed."""
    root = home.resolve()
    return not path.is_symlink() and path.resolve().is_relative_to(root) and path.resolve() != root
