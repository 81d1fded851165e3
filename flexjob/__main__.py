"""``python -m flexjob`` and the ``flexjob`` console script (``main``, pyproject's
``[project.scripts]``): one command; a command that finished ends without the interpreter's
teardown (``platform.fast_exit``)."""

from typing import NoReturn

from flexjob.cli.main import app
from flexjob.platform.fast_exit import exit_now, exit_status


def main() -> NoReturn:
    """Run the command line; a finished command (``SystemExit``, as every Typer command ends)
    exits at once with its status, an exception keeps the normal exit and its traceback."""
    try:
        app()
    except SystemExit as done:
        exit_now(exit_status(done.code))
    exit_now(0)


if __name__ == "__main__":
    main()
