"""Tables of simulation results: one row per policy, with ratios against a baseline.

For: ``flexjob simulate`` output and ``benchmarks/scheduler.py``. Not for: running simulations.
"""

from collections.abc import Sequence

from flexjob.scheduler.simulator import SimResult

HEADER = (
    "policy",
    "avg JCT (h)",
    "p99 JCT (h)",
    "makespan (h)",
    "GPU util",
    "restarts",
    "decide ms (mean/p99/max)",
    "GC ms (max)",
)


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base > 0 else "-"


def result_rows(
    results: Sequence[SimResult], baseline: str | None = None
) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The header and rows; with ``baseline``, each time gets its ratio to that policy's."""
    base = next((r for r in results if r.policy == baseline), None)
    header: tuple[str, ...] = HEADER
    if base is not None:
        header = (
            *HEADER[:4],
            "avg vs " + base.policy,
            "p99 vs " + base.policy,
            "makespan vs " + base.policy,
            *HEADER[4:],
        )
    rows = []
    for r in results:
        row = [
            r.policy,
            f"{r.avg_jct / 3600:.2f}",
            f"{r.p99_jct / 3600:.2f}",
            f"{r.makespan / 3600:.2f}",
        ]
        if base is not None:
            row += [
                _ratio(r.avg_jct, base.avg_jct),
                _ratio(r.p99_jct, base.p99_jct),
                _ratio(r.makespan, base.makespan),
            ]
        row += [
            f"{r.gpu_utilisation:.0%}",
            str(r.restarts),
            f"{r.decision_ms:.1f}/{r.decision_p99_ms:.1f}/{r.decision_max_ms:.1f}",
            f"{r.decision_gc_max_ms:.1f}",
        ]
        if r.unfinished:
            row[0] += f" ({len(r.unfinished)} unfinished)"
        rows.append(tuple(row))
    return header, rows


def format_table(results: Sequence[SimResult], baseline: str | None = None) -> str:
    """A plain-text table, columns aligned."""
    header, rows = result_rows(results, baseline)
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
