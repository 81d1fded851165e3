"""Hostile goodput profilings: what a trainer publishes under ``names.KV_PROFILINGS`` and the
master copies into the job's ``status.profilings`` (``master.profilings_sync``). A document over
``api.limits``' profilings bounds (size, depth), one that is not JSON or not an object, is
refused by ``KVSet`` naming the bound (INVALID_ARGUMENT, the key's value as it was), and one
that reached the store anyway (a journal of an older master) is never copied."""

from __future__ import annotations

import json
import logging
from typing import Any

import grpc
import pytest

from flexjob.api import ElasticJob, names
from flexjob.api.limits import MAX_PROFILINGS_BYTES, MAX_PROFILINGS_DEPTH
from flexjob.master.profilings_sync import ProfilingsSync, status_writer
from flexjob.platform.local import LocalPlatform
from flexjob.rpc.gen import master_pb2 as pb

from .conftest import CALL_TIMEOUT, Home, Master, assert_refused

GOOD = {"steps": [{"nodes": 1, "replicas": 2, "localBatch": 32, "stepTime": 0.1}]}


def _nested(depth: int) -> bytes:
    return ('{"a":' + "[" * depth + "]" * depth + "}").encode()


HOSTILE = {
    "over the size bound": (
        json.dumps({"pad": "x" * MAX_PROFILINGS_BYTES}).encode(),
        f"at most {MAX_PROFILINGS_BYTES}",
    ),
    "nested 900 deep": (_nested(900), f"nested more than {MAX_PROFILINGS_DEPTH} levels"),
    "nested past the parser's stack": (_nested(100_000), "not JSON"),
    "not JSON": (b"{not json", "not JSON"),
    "a list, not an object": (b"[1, 2]", "must be a JSON object"),
    "not UTF-8": (b'{"a": "\xff"}', "not JSON"),
}


def _publish(m: Master, raw: bytes) -> object:
    request = pb.KVSetRequest(key=names.KV_PROFILINGS, value=raw)
    return m.control.KVSet(request, timeout=CALL_TIMEOUT)


@pytest.mark.parametrize(("raw", "says"), HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_profilings_are_refused_by_kv_set_naming_the_bound(
    master: Master, raw: bytes, says: str
) -> None:
    _publish(master, json.dumps(GOOD).encode())
    before = master.books(), master.service.kv_get(names.KV_PROFILINGS)
    assert_refused(lambda: _publish(master, raw), grpc.StatusCode.INVALID_ARGUMENT, says)
    assert (master.books(), master.service.kv_get(names.KV_PROFILINGS)) == before


def test_an_add_to_the_profilings_key_is_refused(master: Master) -> None:
    before = master.books(), master.service.kv_get(names.KV_PROFILINGS)
    request = pb.KVAddRequest(key=names.KV_PROFILINGS, amount=1)
    assert_refused(
        lambda: master.control.KVAdd(request, timeout=CALL_TIMEOUT),
        grpc.StatusCode.INVALID_ARGUMENT,
        "profilings",
    )
    assert (master.books(), master.service.kv_get(names.KV_PROFILINGS)) == before


@pytest.mark.parametrize(("raw", "says"), HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_profilings_already_in_the_store_are_never_copied(
    raw: bytes, says: str, caplog: pytest.LogCaptureFixture
) -> None:
    written: list[dict[str, Any]] = []
    sync = ProfilingsSync({names.KV_PROFILINGS: raw}.get, written.append)
    with caplog.at_level(logging.WARNING, logger="flexjob.master.profilings_sync"):
        assert not sync.tick(force=True)
    assert written == []
    assert any(says in r.getMessage() for r in caplog.records), caplog.text


def test_bounded_profilings_are_still_published_and_copied(master: Master) -> None:
    _publish(master, json.dumps(GOOD).encode())
    written: list[dict[str, Any]] = []
    assert ProfilingsSync(master.service.kv_get, written.append).tick(force=True)
    assert written == [GOOD]


def test_a_copy_that_would_grow_the_merged_status_past_the_bound_is_never_written(
    home: Home, caplog: pytest.LogCaptureFixture
) -> None:
    """What the server's posts left counts: the trainers' document merges into it."""
    platform = LocalPlatform(home.path)
    try:
        platform.create_job(ElasticJob.model_validate({"metadata": {"name": "j"}}))
        posted = {"server": "x" * (MAX_PROFILINGS_BYTES // 2)}
        platform.patch_job_status("default", "j", {"profilings": posted})
        write = status_writer("local", "default", "j")
        assert write is not None
        doc = json.dumps({"trainer": "y" * (MAX_PROFILINGS_BYTES // 2)}).encode()
        sync = ProfilingsSync({names.KV_PROFILINGS: doc}.get, write)
        with caplog.at_level(logging.WARNING, logger="flexjob.master.profilings_sync"):
            assert not sync.tick(force=True)
        status = platform.get_job("default", "j").status
        assert status is not None and status.profilings == posted
        assert f"at most {MAX_PROFILINGS_BYTES}" in caplog.text
    finally:
        platform.close()
