"""``lazy_exports``: a package's public names, each loaded from its module on first use.

For package ``__init__`` files that re-export many names (PEP 562 ``__getattr__`` and
``__dir__``): importing one submodule, or one light name, no longer imports every heavy
sibling (the pydantic job models), so processes that need little start faster. Type checkers
see the names through ``if TYPE_CHECKING:`` imports beside it. A name spelled like a
submodule (a module ``optimize`` that defines ``optimize``) cannot load lazily: importing the
submodule sets the package's attribute to the module, so ``lazy_exports`` refuses it.
"""

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose name ``n`` is defined in its
    submodule ``exports[n]``; a name once loaded is kept in the package (no second lookup)."""
    clash = sorted(set(exports) & set(exports.values()))
    if clash:
        raise ValueError(f"{package}: {clash} name both an export and a submodule")

    def getattr_(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return getattr_, dir_
