"""``python -m flexjob``: the same command as the ``flexjob`` console script."""

from flexjob.cli.main import app

if __name__ == "__main__":
    app()
