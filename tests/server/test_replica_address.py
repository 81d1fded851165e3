"""What the server tells a DI coordinator about where a replica listens."""

from flexjob.api import ReplicaPhase, ReplicaType
from flexjob.platform.contract import Replica, Service
from flexjob.server.jobs import replica_address


def replica(address: str | None) -> Replica:
    return Replica(
        namespace="default", job="j", name="j-learner-0", type=ReplicaType.LEARNER, index=0,
        phase=ReplicaPhase.RUNNING, address=address,
    )  # fmt: skip


SERVICE = Service("default", "j", "j-learner-0", "j-learner-0", "j-learner-0.default.svc:22271")


def test_a_pod_ip_gets_its_service_port() -> None:
    assert replica_address(replica("10.1.2.3"), SERVICE) == "10.1.2.3:22271"
    assert replica_address(replica("fd00::7"), SERVICE) == "[fd00::7]:22271"


def test_a_local_replica_keeps_its_own_host_and_port() -> None:
    assert replica_address(replica("127.0.0.1:40001"), SERVICE) == "127.0.0.1:40001"
    assert replica_address(replica("127.0.0.1:40001"), None) == "127.0.0.1:40001"


def test_a_replica_without_an_address_yet_is_reached_through_its_service() -> None:
    assert replica_address(replica(None), SERVICE) == SERVICE.address
    assert replica_address(replica(None), None) is None
