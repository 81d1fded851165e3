"""A node's replica type: a string on the wire, a ``ReplicaType`` in the master."""

from flexjob.api import ReplicaType
from flexjob.rpc.convert import node_from_pb, node_to_pb
from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.messages import NodeRef


def test_a_node_ref_crosses_the_wire_as_a_string_and_comes_back_as_the_enum() -> None:
    msg = node_to_pb(NodeRef("ps-1", ReplicaType.PS, 1))
    assert (msg.replica_type, msg.replica_index) == ("ps", 1)
    back = node_from_pb(msg)
    assert back == NodeRef("ps-1", ReplicaType.PS, 1)
    assert type(back.replica_type) is ReplicaType


def test_a_type_the_master_does_not_know_reads_as_a_worker() -> None:
    for sent in ("", "trainer"):
        node = node_from_pb(pb.NodeRef(node_id="n", replica_type=sent))
        assert node.replica_type is ReplicaType.WORKER
