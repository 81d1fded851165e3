"""The grpcio and protobuf floors in pyproject.toml are what the generated code in
``flexjob/rpc/gen`` checks at import: an install at the floor can import it."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "flexjob" / "rpc" / "gen"


def requirement(name: str) -> str:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    [found] = [d for d in deps if re.match(rf"{name}\b", d)]
    return str(found)


def test_the_grpcio_floor_is_the_version_the_stubs_were_generated_with() -> None:
    versions = {
        m.group(1)
        for f in GEN.glob("*_grpc.py")
        for m in [re.search(r"GRPC_GENERATED_VERSION = '([\d.]+)'", f.read_text())]
        if m
    }
    assert len(versions) == 1, versions
    assert requirement("grpcio") == f"grpcio>={versions.pop()}"


def test_the_protobuf_floor_is_the_runtime_the_messages_require() -> None:
    pattern = (
        r"ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,"
        r"\s*(\d+),\s*(\d+),\s*(\d+),"
    )
    versions = {
        m.groups() for f in GEN.glob("*_pb2.py") for m in [re.search(pattern, f.read_text())] if m
    }
    assert len(versions) == 1, versions
    major, minor, patch = versions.pop()
    assert requirement("protobuf") == f"protobuf>={major}.{minor}.{patch},<{int(major) + 1}"
