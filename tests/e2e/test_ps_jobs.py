"""Parameter-server jobs through ``flexjob submit``: the CTR example with 2 PS and 2 workers
survives a SIGKILLed worker, and a SIGKILLed PS (relaunched, restored from its checkpoint),
finishes every shard exactly once and meets its AUC goal; the DLRover PS format runs to
Succeeded; ElasticDL's (pods with ``restartPolicy: Never``: its master relaunches them) loses a
worker and a PS and still Succeeds with every shard once."""

import os
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
import yaml

from flexjob.api import names
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import run_flexjob
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / "examples" / "specs"
AUC = re.compile(r"AUC model=([0-9.]+) ground-truth=([0-9.]+)")
# 300,000 samples: the AUC ratio came out 0.978-0.981 in 6 runs with a fault (200,000: 0.969-0.978,
# too close to the 0.97 goal for an asynchronous run whose interleaving varies).
TRAIN_SIZE, EPOCHS, SHARD_SIZE = 300_000, 2, 8192


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "FLEXJOB_HOME": str(home), "PATH": path, "PYTHONPATH": pythonpath}


def flexjob(env: dict[str, str], *args: str, timeout: float = 30) -> str:
    out = run_flexjob(env, *args, timeout=timeout, cwd=REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def phase(home: Path, name: str) -> str:
    job = LocalPlatform(home).get_job("default", name)
    return job.status.phase.value if job.status else ""


def ctr_spec(
    tmp_path: Path,
    shard_log: Path,
    ps_checkpoint_s: int = 0,
    step_delay: float = 0.01,
    max_ps: int = 2,
) -> Path:
    wire = yaml.safe_load((SPECS / "ctr-ps.yaml").read_text())
    wire["spec"]["replicaSpecs"]["ps"]["maxReplicas"] = max_ps
    if ps_checkpoint_s:
        ps = wire["spec"]["replicaSpecs"]["ps"]["template"]["spec"]["containers"][0]
        ps["env"] = [{"name": names.ENV_PS_CHECKPOINT_INTERVAL, "value": str(ps_checkpoint_s)}]
    main = wire["spec"]["replicaSpecs"]["worker"]["template"]["spec"]["containers"][0]
    main["command"] = ctr_command(main["command"][:2], shard_log, step_delay)
    path = tmp_path / "ctr-ps.yaml"
    path.write_text(yaml.safe_dump(wire))
    return path


def ctr_command(script: list[str], shard_log: Path, step_delay: float = 0.01) -> list[str]:
    """``script`` (``python examples/ctr/train.py``) with this module's data set and shard log."""
    return [
        *script,
        *("--train-size", str(TRAIN_SIZE), "--epochs", str(EPOCHS)),
        *("--shard-size", str(SHARD_SIZE), "--step-delay", str(step_delay)),
        *("--shard-log", str(shard_log)),
    ]


def elasticdl_spec(tmp_path: Path, shard_log: Path) -> Path:
    """``elasticdl-ps-ctr.yaml`` (an ElasticAIJob on flexjob's master, pods with
    ``restartPolicy: Never``) on this module's data set, its PS checkpointing every second
    (through ElasticDL's ``--envs`` job argument)."""
    wire = yaml.safe_load((SPECS / "elasticdl-ps-ctr.yaml").read_text())
    wire["spec"]["jobArgs"].append(f"--envs {names.ENV_PS_CHECKPOINT_INTERVAL}=1")
    main = wire["spec"]["Worker"]["template"]["spec"]["containers"][0]
    main["command"] = ctr_command(main["command"][:2], shard_log)
    path = tmp_path / "elasticdl-ps-ctr.yaml"
    path.write_text(yaml.safe_dump(wire))
    return path


def worker_process(shard_log: Path, index: int) -> psutil.Process | None:
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if str(shard_log) in " ".join(proc.info["cmdline"] or ()) and (
                proc.environ().get("FLEXJOB_REPLICA_INDEX") == str(index)
            ):
                return proc
        except psutil.Error:
            continue
    return None


def ps_process(home: Path, index: int) -> psutil.Process | None:
    """The ``flexjob ps`` process of replica ``index`` of this test's job (its checkpoint
    directory lies under this test's home)."""
    for proc in psutil.process_iter(["cmdline"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or ())
            if f"--checkpoint-dir {home}" in cmdline and (
                proc.environ().get(names.ENV_REPLICA_INDEX) == str(index)
            ):
                return proc
        except psutil.Error:
            continue
    return None


def ctr_job_meets_its_goals(
    tmp_path: Path,
    env: dict[str, str],
    home: Path,
    kill: Callable[[Path], None],
    step_delay: float = 0.01,
    max_ps: int = 2,
    after_shards: int = 12,
    killed_workers: int = 0,
    name: str = "ctr-ps",
) -> None:
    """Run the CTR job (``name``: ``ctr-ps``, or ``elasticdl-ps-ctr`` in ElasticDL's format),
    call ``kill`` once ``after_shards`` shards (a quarter) are done, then check the job
    succeeded with every sample of every epoch trained once and the AUC goal met
    (``killed_workers``: how many workers ``kill`` kills)."""
    shard_log = tmp_path / "shards.log"
    if name == "ctr-ps":
        spec = ctr_spec(tmp_path, shard_log, 1, step_delay=step_delay, max_ps=max_ps)
    else:
        spec = elasticdl_spec(tmp_path, shard_log)
    flexjob(env, "submit", "--detach", str(spec))
    wait_until(
        lambda: shards_accepted(shard_log) >= after_shards,
        timeout=120,
        interval=0.2,
        what=f"{after_shards} shards done",
    )
    kill(shard_log)
    wait_until(lambda: phase(home, name) in ("Succeeded", "Failed"), timeout=180, interval=0.5)
    assert phase(home, name) == "Succeeded", flexjob(env, "logs", name, "--replica", "master-0")
    logs = flexjob(env, "logs", name, "--replica", "worker-0") + flexjob(
        env, "logs", name, "--replica", "worker-1"
    )
    master = flexjob(env, "logs", name, "--replica", "master-0")
    assert_every_shard_once_and_auc_met(shard_log, logs, master, unanswered=killed_workers)


def shards_accepted(shard_log: Path) -> int:
    """How many shard reports the master has accepted so far (the workers' shard log)."""
    if not shard_log.exists():
        return 0
    return sum(line.startswith("accepted ") for line in shard_log.read_text().splitlines())


def assert_every_shard_once_and_auc_met(
    shard_log: Path, logs: str, context: str = "", unanswered: int = 0
) -> None:
    """Each shard of every epoch accepted exactly once (the shard log), every sample of every
    epoch in them, and each worker's held-out AUC within 3% of the ground truth's.

    A worker killed between reporting a shard and writing the master's answer leaves the report
    unanswered in the log: such a shard counts as done by that report when no other report of it
    was accepted (the job succeeded, so the master had it done), and at most ``unanswered`` such
    reports are allowed (one per killed worker). A missed AUC goal shows the workers' logs and
    ``context`` (the master's log: when each worker joined and left)."""
    reported: dict[int, list[list[int]]] = {}
    answered: dict[int, list[str]] = {}
    for word, shard, *indices in (line.split() for line in shard_log.read_text().splitlines()):
        if word == "reporting":
            reported.setdefault(int(shard), []).append([int(i) for i in indices])
        else:
            answered.setdefault(int(shard), []).append(word)
    done: dict[int, list[int]] = {}
    dangling = []
    for shard, reports in reported.items():
        answers = answered.get(shard, [])
        accepted = answers.count("accepted")
        assert accepted <= 1, f"shard {shard} accepted {accepted} times"
        unanswered_here = len(reports) > len(answers)
        if unanswered_here:
            dangling.append(shard)
        if accepted or unanswered_here:
            done[shard] = reports[0]
        assert all(r == reports[0] for r in reports), f"shard {shard} changed its samples"
    assert len(dangling) <= unanswered, f"reports without an answer: {dangling}"
    shards_total = EPOCHS * -(-TRAIN_SIZE // SHARD_SIZE)
    assert sorted(done) == list(range(shards_total))  # each shard done, none twice
    samples = sorted(i for indices in done.values() for i in indices)
    assert samples == sorted(list(range(TRAIN_SIZE)) * EPOCHS)  # every sample, every epoch
    found = [(float(m), float(t)) for m, t in AUC.findall(logs)]
    assert found, logs
    for model_auc, truth_auc in found:
        assert model_auc >= 0.97 * truth_auc, (model_auc, truth_auc, logs, context)


def kill_worker_1(shard_log: Path) -> None:
    """SIGKILL worker-1's training process."""
    victim = wait_until(lambda: worker_process(shard_log, 1), timeout=10, what="worker-1")
    victim.send_signal(signal.SIGKILL)


def test_ctr_job_survives_a_killed_worker_with_every_shard_done_once(
    tmp_path: Path, env: dict[str, str], home: Path
) -> None:
    ctr_job_meets_its_goals(tmp_path, env, home, kill_worker_1, killed_workers=1)
    assert_shards_back_before_the_replacement(
        flexjob(env, "logs", "ctr-ps", "--replica", "master-0")
    )


def assert_shards_back_before_the_replacement(master_log: str) -> None:
    """The killed worker-1 was dead to the master (its shards back in TODO) before its
    replacement's process started: its broken connection (``replica_link`` holds an ``Attach``
    stream) or the platform's word, whichever came first, not the replacement's arrival."""
    worker_1 = [line for line in master_log.splitlines() if " node=worker-1 " in line]
    started = [i for i, line in enumerate(worker_1) if "replica process started" in line]
    dead = [i for i, line in enumerate(worker_1) if "event=node_dead " in line]
    assert len(started) >= 2 and dead and started[0] < dead[0] < started[1], worker_1


def kill_ps_1(home: Path) -> None:
    """SIGKILL ps-1 once it has a checkpoint."""
    wait_until(
        lambda: list((home / "jobs").rglob("ps-1-of-2.npz")),
        timeout=30,
        what="a checkpoint of ps-1",
    )
    victim = wait_until(lambda: ps_process(home, 1), timeout=10, what="ps-1")
    victim.send_signal(signal.SIGKILL)


def test_ctr_job_survives_a_killed_ps_restored_from_its_checkpoint(
    tmp_path: Path, env: dict[str, str], home: Path
) -> None:
    def kill_ps(shard_log: Path) -> None:
        kill_ps_1(home)

    ctr_job_meets_its_goals(tmp_path, env, home, kill_ps)
    assert "event=ps_restored index=1 num_ps=2" in flexjob(
        env, "logs", "ctr-ps", "--replica", "ps-1"
    )
    master_log = flexjob(env, "logs", "ctr-ps", "--replica", "master-0")
    assert "ps 1 relaunched and restored its checkpoint" in master_log  # counted in its stats


SET_CHANGED = re.compile(
    r"event=ps_set_changed version=(\d+) from=(\d+) to=(\d+) rows_before=(\d+) "
    r"rows_after=(\d+) value_sum_before=(\S+) value_sum_after=(\S+)"
)


def test_ctr_job_goes_from_2_to_3_to_2_ps_with_every_row_moved_once(
    tmp_path: Path, env: dict[str, str], home: Path
) -> None:
    def changes(running: bool = True) -> list[tuple[str, ...]]:
        if running:
            ended = phase(home, "ctr-ps") in ("Succeeded", "Failed")
            assert not ended, "the job ended before the PS changes"
        log = "".join(LocalPlatform(home).read_logs("default", "ctr-ps-master-0"))
        return SET_CHANGED.findall(log)

    def scale_2_3_2(shard_log: Path) -> None:
        flexjob(env, "scale", "ctr-ps", "--ps", "3")
        wait_until(lambda: len(changes()) >= 1, timeout=60, interval=0.5, what="2 -> 3 PS")
        flexjob(env, "scale", "ctr-ps", "--ps", "2")
        wait_until(lambda: len(changes()) >= 2, timeout=60, interval=0.5, what="3 -> 2 PS")

    ctr_job_meets_its_goals(
        tmp_path, env, home, scale_2_3_2, step_delay=0.02, max_ps=3, after_shards=4
    )
    done = changes(running=False)
    assert [(int(v), int(a), int(b)) for v, a, b, *_ in done] == [(2, 2, 3), (3, 3, 2)]
    for _, _, _, rows_before, rows_after, sum_before, sum_after in done:
        assert int(rows_before) == int(rows_after) > 0  # every row came over exactly once
        assert float(sum_after) == pytest.approx(float(sum_before), rel=1e-9)
    ps2_log = flexjob(env, "logs", "ctr-ps", "--replica", "ps-2")
    assert "event=ps_set_loaded index=2 num_ps=3 from_num_ps=2" in ps2_log


def test_the_dlrover_ps_format_runs_to_succeeded_with_a_flexjob_master(
    env: dict[str, str], home: Path
) -> None:
    name = "dlrover-ps-ctr"
    flexjob(env, "submit", "--detach", str(SPECS / f"{name}.yaml"))
    wait_until(lambda: phase(home, name) in ("Succeeded", "Failed"), timeout=180, interval=0.5)
    assert phase(home, name) == "Succeeded", flexjob(env, "logs", name, "--replica", "worker-0")
    assert "flexjob ps 0/2 serving" in flexjob(env, "logs", name, "--replica", "ps-0")
    assert "event=master_started" in flexjob(env, "logs", name, "--replica", "master-0")
    worker_log = flexjob(env, "logs", name, "--replica", "worker-1")
    assert AUC.search(worker_log), worker_log


def test_an_elasticdl_job_whose_pods_say_never_relaunches_a_killed_worker_and_ps_and_succeeds(
    tmp_path: Path, env: dict[str, str], home: Path
) -> None:
    def kill_worker_and_ps(shard_log: Path) -> None:
        kill_worker_1(shard_log)
        kill_ps_1(home)

    name = "elasticdl-ps-ctr"
    ctr_job_meets_its_goals(tmp_path, env, home, kill_worker_and_ps, killed_workers=1, name=name)
    assert "event=ps_restored index=1 num_ps=2" in flexjob(env, "logs", name, "--replica", "ps-1")
