"""DI-engine 0.5.3's own HTTP client (``OperatorServer``), loaded from the published wheel.

Only ``ding/interaction/base`` and ``ding/worker/coordinator/operator_server.py`` are taken from
the wheel (``pip download --no-deps di-engine==0.5.3``) into a throwaway directory; nothing of
DI-engine becomes a dependency of flexjob. Their imports need ``flask``, ``requests`` and
``urlobject`` (the ``test`` extra). The test is skipped, saying why, when the wheel cannot be
downloaded (no registry) or those modules are missing.
"""

import importlib
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

DING_VERSION = "0.5.3"
WANTED = ("ding/interaction/base/", "ding/worker/coordinator/operator_server.py")
PACKAGES = ("ding", "ding/interaction", "ding/worker", "ding/worker/coordinator")


def _download(dest: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest)]
    done = subprocess.run(
        [*command, f"di-engine=={DING_VERSION}"], capture_output=True, text=True, timeout=300
    )
    wheels = sorted(dest.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        pytest.skip(f"cannot download di-engine {DING_VERSION}: {done.stderr.strip()[-300:]}")
    return wheels[0]


@contextmanager
def operator_server_class(workdir: Path) -> Iterator[Any]:
    """DI-engine's ``OperatorServer`` class, importable while the context is open."""
    for module in ("flask", "requests", "urlobject"):
        pytest.importorskip(module, reason=f"DI-engine's client imports {module}: [test] extra")
    wheel = _download(workdir / "wheel")
    src = workdir / "src"
    with zipfile.ZipFile(wheel) as archive:
        members = [n for n in archive.namelist() if n.startswith(WANTED)]
        archive.extractall(src, members)
    for package in PACKAGES:  # empty packages: none of the rest of DI-engine is imported
        init = src / package / "__init__.py"
        if not init.exists():
            init.write_text("")
    sys.path.insert(0, str(src))
    try:
        module = importlib.import_module("ding.worker.coordinator.operator_server")
        yield module.OperatorServer
    finally:
        sys.path.remove(str(src))
        for name in [m for m in sys.modules if m == "ding" or m.startswith("ding.")]:
            del sys.modules[name]
