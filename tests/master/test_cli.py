import subprocess
import sys
from pathlib import Path


def test_cli_import_does_not_load_grpc_or_torch() -> None:
    code = "import sys, flexjob.cli.main; print('grpc' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_master_command_without_a_job_or_config_fails_with_a_clear_message() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flexjob", "master"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode != 0 and "--job FILE or --config FILE" in out.stderr


def test_master_command_reports_a_bad_job_field(tmp_path: Path) -> None:
    bad = tmp_path / "job.yaml"
    bad.write_text("metadata: {name: x}\nspec:\n  dataset: {size: 10, epochs: 0}\n")
    out = subprocess.run(
        [sys.executable, "-m", "flexjob", "master", "--job", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "dataset.epochs must be >= 1" in out.stderr
