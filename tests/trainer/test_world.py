from __future__ import annotations

import pytest

from flexjob.api import names
from flexjob.trainer.rank_sync import choose_source
from flexjob.trainer.world import Generation, NodeIdentity, world_env, world_info

GEN = Generation(
    round=3, node_rank=1, num_nodes=2, store_address="10.0.0.1:29500", store_prefix="j/"
)
IDENT = NodeIdentity("worker-1", "worker", 1, local_rank=1, local_world_size=2, master="m:1")


def test_process_rank_is_node_rank_times_nproc_plus_local_rank() -> None:
    assert GEN.rank(1, 2) == 3 and GEN.world_size(2) == 4


def test_world_env_sets_torch_and_flexjob_variables() -> None:
    env = world_env(GEN, IDENT, 0)
    assert env[names.ENV_RANK] == "3" and env[names.ENV_WORLD_SIZE] == "4"
    assert env[names.ENV_LOCAL_RANK] == "1" and env[names.ENV_LOCAL_WORLD_SIZE] == "2"
    assert (env[names.ENV_MASTER_ADDR], env[names.ENV_MASTER_PORT]) == ("10.0.0.1", "29500")
    assert env[names.ENV_ROUND] == "3" and env[names.ENV_STORE_PREFIX] == "j/"


def test_world_env_sets_torchruns_group_role_and_restart_variables() -> None:
    env = world_env(GEN, IDENT, 5)
    assert (env[names.ENV_GROUP_RANK], env[names.ENV_GROUP_WORLD_SIZE]) == ("1", "2")
    assert (env[names.ENV_ROLE_RANK], env[names.ENV_ROLE_WORLD_SIZE]) == ("3", "4")
    assert env[names.ENV_TORCHELASTIC_RESTART_COUNT] == "5"


def test_world_info_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in world_env(GEN, IDENT, 0).items():
        monkeypatch.setenv(key, value)
    info = world_info()
    assert (info.rank, info.world_size, info.node_rank, info.round) == (3, 4, 1, 3)


def test_process_shard_id_is_the_node_id_for_local_rank_zero() -> None:
    assert NodeIdentity("n", "worker", 0, 0, 2, None).process_id == "n"
    assert IDENT.process_id == "worker-1.1"


def test_state_comes_from_the_rank_with_most_steps_lowest_rank_on_ties() -> None:
    assert choose_source([5, 9, 9, 0]) == 1


def test_process_ids_follow_the_members_in_rank_order() -> None:
    gen = Generation(4, 0, 2, "h:1", "j/", members=("worker-2", "worker-0"))
    assert gen.process_ids(2) == ["worker-2", "worker-2.1", "worker-0", "worker-0.1"]
    assert [NodeIdentity("worker-0", "worker", 0, r, 2, None).process_id for r in (0, 1)] == [
        "worker-0",
        "worker-0.1",
    ]


def test_process_ids_are_unknown_without_the_members() -> None:
    assert GEN.process_ids(2) is None
