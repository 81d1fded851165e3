"""What ``master_load.py`` prints: its measured rows, the bare servers' baselines and the table
that sets one against the other (the percentiles in ms it shows); rows saved to a file
(``--save-rows``) and a later run's rows set against them (``--baseline``: e.g. fsync off)."""

import argparse
import statistics
from dataclasses import dataclass
from typing import Any

from benchmarks.cpu_layout import Cpus


@dataclass
class Bare:
    """A bare server's call rate back to back, its latencies per call back to back and paced
    (per paced interval), and its CPU seconds per call back to back."""

    rate: float
    lat: list[float]
    paced: dict[float, list[float]]
    cpu_per_call: float


def pct_ms(latencies: list[float], pct: int) -> float:
    """The ``pct``-th percentile of ``latencies`` (seconds) in ms; 0 below 100 samples."""
    return statistics.quantiles(latencies, n=100)[pct - 1] * 1000 if len(latencies) > 100 else 0.0


def p99_ms(latencies: list[float]) -> float:
    return pct_ms(latencies, 99)


@dataclass(frozen=True)
class Row:
    """One shard phase: shard requests/s, p50 and p99 per shard, the master's CPU seconds per
    shard, the seconds between one thread's shards (0: back to back), the client
    processes' CPU seconds per second (1.0: one CPU busy) and the CPU seconds per second of
    whatever else ran where the master ran (``Cpus.others``)."""

    name: str
    rate: float
    p50_ms: float
    p99_ms: float
    inside_p99_ms: float
    cpu: float
    interval: float
    clients_cpu: float
    others_cpu: float


def rows_table(
    args: argparse.Namespace, rows: list[Row], bares: list[Bare], where: Cpus
) -> list[list[str]]:
    def vs(value: float, *bases: float) -> list[str]:
        return [x for b in bases for x in (f"{b:,.1f}", f"{value / b:.2f}" if b else "-")]

    clients = str(args.procs * args.threads)
    pairs = next(r.rate for r in rows if r.name == "pairs")
    table = []
    for r in rows:
        vs_pairs = f"{r.rate / pairs:.2f}" if r.name != "get_shard" else "-"
        rates = vs(r.rate, *(b.rate for b in bares))
        table.append([f"{r.name} shard requests/s", clients, f"{r.rate:,.0f}", ">= 5,000"])
        table[-1] += [*rates, vs_pairs]
        bare_lats = [b.paced[r.interval] if r.interval else b.lat for b in bares]
        table.append(["  p50 latency per shard (ms)", clients, f"{r.p50_ms:.1f}", "-"])
        table[-1] += [*vs(r.p50_ms, *(pct_ms(lat, 50) for lat in bare_lats)), "-"]
        table.append(["  p99 latency per shard (ms)", clients, f"{r.p99_ms:.1f}", "< 10"])
        table[-1] += [*vs(r.p99_ms, *(p99_ms(lat) for lat in bare_lats)), "-"]
        inside = f"<= {r.inside_p99_ms:g}" if r.inside_p99_ms else "-"
        table.append(["  p99 inside the master (ms)", clients, inside, "-"])
        table[-1] += ["-"] * (len(bares) * 2 + 1)
        if not r.interval:
            cpus = [b.cpu_per_call * 1e6 for b in bares]
            table.append(["  master CPU per shard (us)", clients, f"{r.cpu * 1e6:.0f}", "-"])
            table[-1] += [*vs(r.cpu * 1e6, *cpus), "-"]
        table.append(["  client processes' CPU (CPUs)", clients, f"{r.clients_cpu:.2f}", "-"])
        table[-1] += ["-"] * (len(bares) * 2 + 1)
        table.append([f"  {where.others_label()}", clients, f"{r.others_cpu:.2f}", "-"])
        table[-1] += ["-"] * (len(bares) * 2 + 1)
    return table


def rows_json(label: str, layouts: dict[str, list[Row]]) -> dict[str, object]:
    """What ``--save-rows`` writes: the run's label and, per layout, each row's rate, CPU per
    shard (us) and p99 (ms)."""
    return {
        "label": label,
        "layouts": {
            name: {
                r.name: {"rate": r.rate, "cpu_us": r.cpu * 1e6, "p99_ms": r.p99_ms} for r in rows
            }
            for name, rows in layouts.items()
        },
    }


def baseline_table(
    label: str, rows: list[Row], saved: dict[str, Any], layout: str
) -> list[list[str]]:
    """This run's rows against the saved run's (``rows_json``) of the same layout: rate and
    master CPU per shard (unpaced rows), each with its ratio (this run / the saved one)."""
    base: dict[str, dict[str, float]] = saved.get("layouts", {}).get(layout, {})
    other = str(saved.get("label", "baseline"))
    table = [["workload", f"rate ({label})", f"rate ({other})", "ratio"]]
    table[0] += [f"CPU us ({label})", f"CPU us ({other})", "ratio"]
    for r in rows:
        b = base.get(r.name)
        if b is None:
            continue
        row = [r.name, f"{r.rate:,.0f}", f"{b['rate']:,.0f}", _ratio(r.rate, b["rate"])]
        cpu = r.cpu * 1e6
        if r.interval:
            row += ["-", "-", "-"]
        else:
            row += [f"{cpu:.0f}", f"{b['cpu_us']:.0f}", _ratio(cpu, b["cpu_us"])]
        table.append(row)
    return table


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}" if base else "-"
