"""The one way the CLI makes a Typer app (the root and each command group).

Help is click's plain text, not rich markup: rich reads ``[...]`` as a style tag and drops it,
and flexjob's help writes defaults and examples in brackets (``kept [a temporary dir,
removed]``, ``[worker-0/rank1]``); plain help also shows a flag without a value type.
"""

from typing import Any

import typer


def new_app(**settings: Any) -> typer.Typer:
    """A Typer app with plain help (``rich_markup_mode=None``) and ``settings``."""
    return typer.Typer(rich_markup_mode=None, **settings)
