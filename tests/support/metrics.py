"""Scrape a /metrics endpoint and parse it with prometheus_client's own parser."""

import urllib.request
from pathlib import Path

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from tests.support.polling import wait_until


def scrape(url: str, token: str = "") -> dict[str, Metric]:
    """Families by name (counters by their name without ``_total``)."""
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    return {m.name: m for m in text_string_to_metric_families(text)}


def value(families: dict[str, Metric], name: str, **labels: str) -> float:
    """The value of the one sample ``name`` with these labels (a family's sample name)."""
    family = name.removesuffix("_total").removesuffix("_count").removesuffix("_sum")
    found = [
        s.value
        for s in families[family].samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, (name, labels, families[family].samples)
    return found[0]


def metrics_url(addr_file: Path, timeout: float = 30.0) -> str:
    """The URL a process wrote to its ``*.addr`` file once its endpoint serves."""
    address = wait_until(
        lambda: addr_file.exists() and addr_file.read_text().strip(), timeout, what=str(addr_file)
    )
    return f"http://{address}/metrics"


DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "flexjob-job.json"
_SUFFIXES = ("_bucket", "_count", "_sum", "_total")


def dashboard_metrics(prefix: str) -> set[str]:
    """The metric families the Grafana dashboard queries whose names start with ``prefix``."""
    import json
    import re

    board = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
    exprs += [a["expr"] for a in board["annotations"]["list"] if "expr" in a]
    exprs.append(board["templating"]["list"][1]["query"])
    names = set()
    for name in re.findall(r"\bflexjob_[a-z_]+", " ".join(exprs)):
        for suffix in _SUFFIXES:
            name = name.removesuffix(suffix)
        if name.startswith(prefix):
            names.add(name)
    return names
