"""The /metrics endpoint: loopback by default, a token required beyond it and checked."""

import urllib.error
import urllib.request

import pytest

from flexjob.api import names
from flexjob.observe import metrics, metrics_http
from tests.support.metrics import scrape, value


def test_a_metric_made_at_its_event_site_is_served_and_parsed() -> None:
    metrics.counter("flexjob_test_events", "Events in this test.", ["kind"]).labels("a").inc(2)
    server = metrics_http.serve_configured(env={})
    assert server is not None and server.host == "127.0.0.1" and server.port > 0
    try:
        got = scrape(server.url)
        assert value(got, "flexjob_test_events_total", kind="a") == 2
        assert "process_cpu_seconds" in got
    finally:
        server.stop()


def test_the_same_name_with_another_kind_or_labels_is_refused() -> None:
    metrics.gauge("flexjob_test_one_owner", "x", ["a"])
    with pytest.raises(ValueError, match="exists as Gauge"):
        metrics.counter("flexjob_test_one_owner", "x", ["a"])
    with pytest.raises(ValueError, match=r"asked for Gauge\['b'\]"):
        metrics.gauge("flexjob_test_one_owner", "x", ["b"])


def test_beyond_loopback_without_a_token_is_refused_before_binding() -> None:
    env = {names.ENV_METRICS_ADDR: "0.0.0.0:0"}
    with pytest.raises(ValueError, match=names.ENV_METRICS_TOKEN):
        metrics_http.serve_configured(env=env)


def test_with_a_token_a_scrape_without_it_gets_401() -> None:
    server = metrics_http.serve("127.0.0.1", 0, token="s3cret")
    try:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(server.url, timeout=10)
        assert err.value.code == 401
        assert "process_cpu_seconds" in scrape(server.url, token="s3cret")
    finally:
        server.stop()


def test_off_serves_nothing_and_a_bad_address_names_the_setting() -> None:
    assert metrics_http.serve_configured(env={names.ENV_METRICS_ADDR: "off"}) is None
    with pytest.raises(ValueError, match="HOST:PORT or 'off'"):
        metrics_http.serve_configured("9464")
