"""What the processes of ``flexjob run`` load before they start the next ones: under CPU
contention every import there delays the first step (``benchmarks/startup.py``)."""

import ast
import subprocess
import sys

import pytest


def loaded(imports: str, heavy: tuple[str, ...]) -> list[str]:
    code = f"import sys, {imports}; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return ast.literal_eval(out.stdout.strip())


@pytest.mark.parametrize(
    ("imports", "heavy"),
    [
        # an agent of `run`, up to starting its workers: no CLI, no gRPC
        ("flexjob.agent.process, flexjob.agent.workers", ("typer", "pydantic", "grpc", "torch")),
        # `run` itself, up to starting its master and agents: no gRPC, no progress line
        ("flexjob.runner.launcher", ("grpc", "rich", "numpy", "flexjob.api.job")),
    ],
)
def test_a_run_process_starts_the_next_without_heavy_imports(
    imports: str, heavy: tuple[str, ...]
) -> None:
    assert loaded(imports, heavy) == []
