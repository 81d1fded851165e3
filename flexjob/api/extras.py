"""Optional dependencies: which pyproject extra brings a module, and the one error a command
gives when it is not installed (``pip install 'flexjob[EXTRA]'``), instead of a traceback.

For: modules that import an extra's package lazily (the brain client's httpx, the plots'
matplotlib). Not for the extras' contents (pyproject.toml; tests/test_install_extras.py
checks that every extra's package is importable lazily).
"""

import importlib
from types import ModuleType

from flexjob.api.errors import FlexjobError


class MissingExtraError(FlexjobError, ImportError):
    """A command needs a package of an extra that is not installed; the message names both."""


def import_extra(module: str, extra: str, needed_for: str) -> ModuleType:
    """``import module``, or ``MissingExtraError`` naming ``pip install 'flexjob[extra]'``."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module.split(".")[0]:
            raise
        raise MissingExtraError(
            f"{needed_for} needs {module}, which is not installed: pip install 'flexjob[{extra}]'"
        ) from None
