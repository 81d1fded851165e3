"""Root causes in the master's KV store: published by a giving-up agent, earliest first."""

from flexjob.agent import failure
from flexjob.agent.failure import RootCause
from flexjob.agent.target import target_problem


class DictKVClient:
    """The three KV calls of the master, on a dict (the wire is tested in tests/rpc)."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def kv_set(self, key: str, value: bytes) -> None:
        self.data[key] = value

    def kv_get(self, key: str) -> bytes | None:
        return self.data.get(key)

    def kv_add(self, key: str, amount: int) -> int:
        value = int(self.data.get(key, b"0")) + amount
        self.data[key] = str(value).encode()
        return value


def cause(node: str, at: float, code: int | None = 1) -> RootCause:
    return RootCause(node, 0, 1, code, at, "restarts used up (3/3)", ("RuntimeError: boom",))


def test_no_cause_until_an_agent_gives_up() -> None:
    kv = DictKVClient()
    assert not failure.failed(kv) and failure.root_causes(kv) == []
    assert kv.data == {}, "reading must not create the counter"


def test_the_earliest_exit_comes_first_whoever_published_first() -> None:
    kv = DictKVClient()
    failure.publish(kv, cause("worker-1", at=20.0))
    failure.publish(kv, cause("worker-0", at=10.0))
    assert failure.failed(kv)
    assert [c.node for c in failure.root_causes(kv)] == ["worker-0", "worker-1"]


def test_summary_names_node_rank_exit_and_the_error_lines() -> None:
    text = cause("worker-1", 1.0).summary()
    assert "node worker-1, rank 1 (local rank 0): exit code 1" in text
    assert "restarts used up (3/3)" in text and "RuntimeError: boom" in text
    assert "killed by SIGKILL" in cause("w", 1.0, code=-9).summary()


def test_a_missing_script_or_module_is_found_before_anything_starts(tmp_path: object) -> None:
    assert target_problem("nope.py", False, cwd="/") == "script not found: nope.py (looked in /)"
    assert target_problem("flexjob", True) is None
    problem = target_problem("no_such_module_xyz.sub", True, cwd="/")
    assert problem is not None and "module not found" in problem
