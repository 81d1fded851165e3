from pathlib import Path

from flexjob.rpc.protogen import GEN_DIR, generate


def test_committed_generated_code_is_current(tmp_path: Path) -> None:
    written = generate(tmp_path)
    assert written
    for path in written:
        assert path.read_text() == (GEN_DIR / path.name).read_text(), (
            f"{path.name} is stale: run `make proto`"
        )


def test_generated_grpc_module_imports_messages_package_relative() -> None:
    text = (GEN_DIR / "master_pb2_grpc.py").read_text()
    assert "from . import master_pb2 as master__pb2" in text
