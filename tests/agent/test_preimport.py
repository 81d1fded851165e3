"""Which workers import torch before their node joins (``agent.target.preimport_torch``), and
that a bootstrap told not to import it runs a standard-library script without loading torch."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flexjob.agent.bootstrap import NO_TORCH
from flexjob.agent.target import preimport_torch

STDLIB_ONLY = "import os, sys\nfrom json import dumps\nprint(dumps(sorted(sys.modules)))\n"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (STDLIB_ONLY, False),
        ("import torch\n", True),
        ("def main():\n    from torch import nn\n", True),  # imports anywhere count
        ("import numpy as np\n", True),  # a third-party package may import torch
        ("from flexjob.trainer import ElasticTrainer\n", True),
        ("from . import sibling\n", False),  # relative: part of the script's own folder
        ("this is not python(\n", True),  # cannot tell: import it, as before
    ],
)
def test_auto_imports_torch_unless_the_script_imports_only_the_standard_library(
    tmp_path: Path, source: str, expected: bool
) -> None:
    (tmp_path / "train.py").write_text(source)
    assert preimport_torch("train.py", False, {}, cwd=str(tmp_path)) is expected


def test_the_variable_forces_it_either_way_and_modules_import_it(tmp_path: Path) -> None:
    (tmp_path / "hello.py").write_text(STDLIB_ONLY)
    var = "FLEXJOB_PREIMPORT_TORCH"
    assert preimport_torch("hello.py", False, {var: "1"}, cwd=str(tmp_path)) is True
    assert preimport_torch("hello.py", False, {var: "auto"}, cwd=str(tmp_path)) is False
    (tmp_path / "big.py").write_text("import torch\n")
    assert preimport_torch("big.py", False, {var: "0"}, cwd=str(tmp_path)) is False
    assert preimport_torch("some.module", True, {}) is True
    with pytest.raises(ValueError, match="FLEXJOB_PREIMPORT_TORCH must be 0, 1 or auto"):
        preimport_torch("hello.py", False, {var: "yes"}, cwd=str(tmp_path))


def test_a_bootstrap_without_torch_runs_the_script_without_loading_it(tmp_path: Path) -> None:
    script = tmp_path / "hello.py"
    script.write_text(STDLIB_ONLY)
    message = {"env": {}, "target": str(script), "args": [], "module": False}
    out = subprocess.run(
        [sys.executable, "-m", "flexjob.agent.bootstrap", NO_TORCH],
        input=json.dumps(message) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert "torch" not in loaded and "os" in loaded


@pytest.mark.parametrize("flags", [(NO_TORCH,), ()])
def test_the_script_runs_with_the_garbage_collector_on(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    """The bootstrap imports torch with the collector off; the script gets it back (once the
    preimport of ``torch._dynamo`` is done, which the script's first optimizer waits for)."""
    script = tmp_path / "gc_state.py"
    script.write_text(
        "import gc, threading\n"
        "for t in threading.enumerate():\n"
        "    if t.name == 'flexjob-preimport':\n"
        "        t.join()\n"
        "print('collector on:', gc.isenabled())\n"
    )
    message = {"env": {}, "target": str(script), "args": [], "module": False}
    out = subprocess.run(
        [sys.executable, "-m", "flexjob.agent.bootstrap", *flags],
        input=json.dumps(message) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.strip().splitlines()[-1] == "collector on: True"
