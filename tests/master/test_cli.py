import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from flexjob.core.training.master_config import MasterConfig
from flexjob.master.launch import spawn_master
from flexjob.rpc.client import MasterClient
from tests.master.conftest import wait_for

JOB = """\
apiVersion: flexjob.dev/v1alpha1
kind: ElasticJob
metadata: {name: clijob}
spec:
  replicaSpecs:
    worker:
      minReplicas: 1
      maxReplicas: 2
      template: {spec: {containers: [{name: main, image: python:3.11}]}}
  dataset: {size: 100, shardSize: 10, epochs: EPOCHS}
"""


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "flexjob", "master", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_cli_import_does_not_load_grpc_or_torch() -> None:
    code = "import sys, flexjob.cli.main; print('grpc' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_a_master_without_ps_or_platform_loads_neither_numpy_nor_the_job_models() -> None:
    """What ``flexjob run``'s master imports before it serves: no PS code's numpy, no job
    models (a platform's node watch, the planner's algorithms, the brain's messages)."""
    heavy = (
        "numpy",
        "flexjob.api.job",
        "flexjob.core.planner.algorithms",
        "flexjob.rpc.brain_messages",
    )
    code = f"import sys, flexjob.master.main; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_master_command_without_a_job_or_config_fails_with_a_clear_message() -> None:
    out = run_cli()
    assert out.returncode != 0 and "--job FILE or --config FILE" in out.stderr


def test_master_command_reports_a_bad_job_field(tmp_path: Path) -> None:
    bad = tmp_path / "job.yaml"
    bad.write_text(JOB.replace("EPOCHS", "0"))
    out = run_cli("--job", str(bad))
    assert out.returncode == 2 and "spec.dataset.epochs: 0 is below the minimum 1" in out.stderr


def test_master_command_refuses_a_bad_straggler_option_naming_it(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB.replace("EPOCHS", "1"))
    out = run_cli("--job", str(job), "--stragglers", "exclude", "--straggler-ratio", "1")
    assert out.returncode == 2 and "(--straggler-ratio) must be > 1, got 1.0" in out.stderr
    out = run_cli("--job", str(job), "--stragglers", "drop")
    assert out.returncode == 2 and "'drop' is not one of" in out.stderr


def test_master_command_refuses_a_cpu_it_may_not_use_naming_the_allowed_ones(
    tmp_path: Path,
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB.replace("EPOCHS", "1"))
    allowed = sorted(os.sched_getaffinity(0))
    out = run_cli("--job", str(job), "--cpu", str(max(allowed) + 1))
    assert out.returncode == 2
    assert f"cpu must be one of the CPUs this process may use {allowed}" in out.stderr


def test_master_process_refuses_a_cpu_it_may_not_use(tmp_path: Path) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    config = tmp_path / "master_config.json"
    config.write_text(MasterConfig(job_dir=str(tmp_path), cpu=max(allowed) + 1).to_json())
    cmd = [sys.executable, "-m", "flexjob.master.process", str(config)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert f"cpu must be one of the CPUs this process may use {allowed}" in out.stderr
    assert not (tmp_path / "master.addr").exists()


def test_master_on_one_cpu_runs_every_thread_there_and_serves(tmp_path: Path) -> None:
    cpu = max(os.sched_getaffinity(0))
    config = MasterConfig(job_dir=str(tmp_path), cpu=cpu, host_store=True)
    master = spawn_master(config)
    try:
        with MasterClient(master.address, "worker-0") as client:
            assert client.join() >= 0  # served by threads started after the confinement
        tasks = Path(f"/proc/{master.process.pid}/task")
        threads = [int(t.name) for t in tasks.iterdir()]
        assert len(threads) > 1
        assert all(os.sched_getaffinity(t) == {cpu} for t in threads)
    finally:
        master.stop()


def test_master_command_serves_a_job_file_and_writes_its_address(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB.replace("EPOCHS", "1"))
    job_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "flexjob", "master", "--job", str(job), "--port", "0"]
    proc = subprocess.Popen(
        [*cmd, "--job-dir", str(job_dir), "--no-store"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        addr = job_dir / "master.addr"
        wait_for(lambda: addr.exists() or proc.poll() is not None, what="master.addr")
        with MasterClient(addr.read_text().strip(), "worker-0") as client:
            assert client.get_progress().samples_total == 100
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "event=master_started job=clijob" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_master_command_serves_the_job_in_its_env_on_its_own_address(tmp_path: Path) -> None:
    """What the operator's implicit master runs: its config in $FLEXJOB_MASTER_CONFIG, the port
    of $FLEXJOB_MASTER."""
    import os

    from flexjob.api import names
    from flexjob.api.load import load_job
    from flexjob.core.training.master_config import MasterConfig
    from flexjob.platform.ports import free_port

    address = f"127.0.0.1:{free_port()}"
    config = MasterConfig.from_job(load_job(JOB.replace("EPOCHS", "1")))
    env = {**os.environ, names.ENV_MASTER_CONFIG: config.to_json(), names.ENV_MASTER: address}
    proc = subprocess.Popen(
        [sys.executable, "-m", "flexjob", "master", "--no-store"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        host, port = address.split(":")

        def listening() -> bool:
            assert proc.poll() is None, "the master exited"
            with socket.socket() as sock:
                return sock.connect_ex((host, int(port))) == 0

        wait_for(listening, what="the master on its own address")
        with MasterClient(address, "worker-0") as client:
            assert client.get_progress().samples_total == 100
    finally:
        proc.terminate()
        proc.wait(timeout=30)
