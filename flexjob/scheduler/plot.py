"""JCT CDF plots of simulation results, one curve per policy, to a PNG (matplotlib Agg).

For: ``flexjob simulate --plot``. Not for: interactive display (no GUI backend is used).
"""

from collections.abc import Sequence
from pathlib import Path

from flexjob.api.extras import import_extra
from flexjob.scheduler.simulator import SimResult


def plot_jct_cdf(results: Sequence[SimResult], path: Path) -> None:
    """Write the CDF of job completion times (hours) of each result to ``path``."""
    matplotlib = import_extra("matplotlib", "plot", "flexjob simulate --plot")
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    try:
        for result in results:
            hours = sorted(v / 3600.0 for v in result.jct.values())
            if not hours:
                continue
            fractions = [(i + 1) / len(hours) for i in range(len(hours))]
            ax.step(hours, fractions, where="post", label=f"{result.policy}")
        ax.set_xlabel("job completion time (hours)")
        ax.set_ylabel("fraction of jobs")
        ax.set_ylim(0, 1.01)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right")
        ax.set_title("JCT CDF by policy")
        fig.tight_layout()
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)
