import subprocess
import sys
from pathlib import Path

from flexjob.core.allocator import StaticPolicy

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "examples" / "traces" / "synthetic.csv"


def _flexjob(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flexjob", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


class ToldPolicy(StaticPolicy):
    """``static`` whose name says the restart delay it was built with."""

    def __init__(self, restart_delay: float = 30.0) -> None:
        self.name = f"told-{restart_delay:g}s"


def test_simulate_prints_a_row_per_policy_and_plots_the_jct_cdf(tmp_path: Path) -> None:
    png = tmp_path / "cdf.png"
    out = _flexjob(
        "simulate",
        "--trace",
        str(SHIPPED),
        "--policy",
        "static",
        "--policy",
        "goodput",
        "--plot",
        str(png),
    )
    assert out.returncode == 0, out.stderr
    assert "avg JCT" in out.stdout and "p99 JCT" in out.stdout and "GPU util" in out.stdout
    assert any(line.startswith("goodput") for line in out.stdout.splitlines())
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_gen_trace_writes_a_trace_simulate_can_read(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    assert _flexjob("simulate", "gen-trace", "--out", str(trace), "--jobs", "5").returncode == 0
    out = _flexjob("simulate", "--trace", str(trace), "--policy", "pack")
    assert out.returncode == 0, out.stderr
    assert "pack" in out.stdout


def test_unknown_policy_exits_2_naming_the_choices(tmp_path: Path) -> None:
    out = _flexjob("simulate", "--trace", str(SHIPPED), "--policy", "nope")
    assert out.returncode == 2
    assert "available:" in out.stderr


def test_simulate_runs_the_pollux_workload_and_reports_restarts_and_decision_time() -> None:
    out = _flexjob(
        "simulate",
        "--workload",
        "pollux",
        "--jobs",
        "6",
        "--policy",
        "tiresias",
        "--policy",
        "goodput",
    )
    assert out.returncode == 0, out.stderr
    assert "restarts" in out.stdout and "decide ms" in out.stdout
    assert any(line.startswith("tiresias") for line in out.stdout.splitlines())


def test_simulate_needs_exactly_one_of_trace_and_workload() -> None:
    out = _flexjob("simulate", "--workload", "pollux", "--trace", str(SHIPPED))
    assert out.returncode == 2
    assert "--trace" in out.stderr


def test_a_restart_aware_policy_is_told_the_simulated_restart_delay() -> None:
    told = f"{__name__}:ToldPolicy"
    out = _flexjob(
        "simulate", "--trace", str(SHIPPED), "--policy", "static", "--policy", told,
        "--restart-delay", "5", "--start-delay", "2",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "restart delay 5s, start delay 2s" in out.stdout
    assert any(line.startswith("told-5s ") for line in out.stdout.splitlines()), out.stdout
