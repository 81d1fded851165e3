"""Local replicas run in flexjob's own Python unless their spec says otherwise.

A spec's ``python -m flexjob agent ...`` (or ``python3``, ``python3.12``, ``flexjob ...``) names
no particular interpreter; run from a virtual environment that is not on ``PATH``, a bare
``python`` would be the system's, without flexjob or torch. So a bare interpreter name becomes
``sys.executable`` and a bare ``flexjob`` becomes ``sys.executable -m flexjob``; a path
(``/usr/bin/python3``, ``./venv/bin/python``) is the spec saying otherwise and is kept.
Not for Kubernetes (there the image decides).
"""

import re
import sys
from collections.abc import Sequence

_BARE_PYTHON = re.compile(r"python(3(\.\d+)?)?")


def own_interpreter(argv: Sequence[str]) -> list[str]:
    """``argv`` with a bare ``python``/``flexjob`` command replaced by this interpreter."""
    if not argv:
        return []
    first, rest = argv[0], list(argv[1:])
    if _BARE_PYTHON.fullmatch(first):
        return [sys.executable, *rest]
    if first == "flexjob":
        return [sys.executable, "-m", "flexjob", *rest]
    return [first, *rest]
