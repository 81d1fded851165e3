"""``python -m flexjob``: the same command as the ``flexjob`` console script; a command that
finished ends without the interpreter's teardown (``platform.fast_exit``)."""

from flexjob.cli.main import app
from flexjob.platform.fast_exit import exit_now, exit_status

if __name__ == "__main__":
    try:
        app()
    except SystemExit as done:
        exit_now(exit_status(done.code))
