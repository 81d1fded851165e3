import subprocess
import sys

from flexjob import __version__


def test_version_flag_prints_the_package_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flexjob", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"flexjob {__version__}"
