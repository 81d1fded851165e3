"""The Grafana dashboard draws one unit per axis (issue 37, item 14): in a panel, the queries
of another unit than the panel's own are on the right axis with their unit, and at most two
units share a panel; rates come from counters (``rate()`` of ``*_total``), never from gauges
named per second."""

import json
import re

from tests.support.metrics import DASHBOARD


def _unit(expr: str) -> str:
    """The unit a query's values are in, from the metric names it reads."""
    if re.search(r"_seconds_(sum|bucket)\b", expr) or re.search(r"_seconds\b(?!_count)", expr):
        return "s"
    return "bytes" if "_bytes" in expr else "short"


def _panels() -> list[dict]:  # type: ignore[type-arg]
    return list(json.loads(DASHBOARD.read_text())["panels"])


def test_every_axis_of_every_panel_has_one_unit() -> None:
    for panel in _panels():
        config = panel["fieldConfig"]
        right = {
            o["matcher"]["options"]: {p["id"]: p["value"] for p in o["properties"]}
            for o in config["overrides"]
            if o["matcher"]["id"] == "byFrameRefID"
        }
        axes: dict[str, set[str]] = {}
        for target in panel["targets"]:
            props = right.get(target["refId"], {})
            axis = props.get("custom.axisPlacement", "left")
            shown = props.get("unit", config["defaults"]["unit"])
            assert shown == _unit(target["expr"]), (panel["title"], target["expr"])
            axes.setdefault(axis, set()).add(shown)
        assert all(len(units) == 1 for units in axes.values()), (panel["title"], axes)


def test_throughput_is_a_rate_of_counters() -> None:
    exprs = " ".join(t["expr"] for p in _panels() for t in p["targets"])
    assert "per_second" not in exprs
    assert "rate(flexjob_master_samples_total" in exprs
    assert "rate(flexjob_agent_samples_total" in exprs
    assert "flexjob_agent_cpu_ratio" in exprs and "cpu_percent" not in exprs
