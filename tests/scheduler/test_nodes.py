from types import SimpleNamespace as NS

import pytest

from flexjob.core.allocator import NodeInfo, Resources
from flexjob.scheduler.nodes import KubernetesNodes, NodeSpecError, parse_nodes


def test_grid_form_makes_count_nodes_of_that_many_gpus() -> None:
    nodes = parse_nodes(["2x4"]).nodes()
    assert nodes == [NodeInfo("node-00", Resources(gpu=4)), NodeInfo("node-01", Resources(gpu=4))]


def test_named_form_reads_kubernetes_quantities() -> None:
    (node,) = parse_nodes(["big:gpu=8,cpu=500m,memory=2Gi"]).nodes()
    assert node == NodeInfo("big", Resources(gpu=8, cpu=0.5, memory=2048))


@pytest.mark.parametrize("spec", ["big", "big:gpu", "big:tpu=4", "big:cpu=lots"])
def test_bad_node_specs_are_rejected_with_the_expected_form(spec: str) -> None:
    with pytest.raises(NodeSpecError, match="--node"):
        parse_nodes([spec])


def _node(name: str, gpus: int, ready: bool = True, unschedulable: bool = False) -> NS:
    return NS(
        metadata=NS(name=name),
        spec=NS(unschedulable=unschedulable),
        status=NS(
            allocatable={"nvidia.com/gpu": str(gpus), "cpu": "8", "memory": "16Gi"},
            conditions=[NS(type="Ready", status="True" if ready else "False")],
        ),
    )


def _pod(node: str, gpus: int, labels: dict[str, str] | None = None) -> NS:
    resources = NS(requests={"nvidia.com/gpu": str(gpus)}, limits=None)
    return NS(
        metadata=NS(labels=labels or {}),
        spec=NS(node_name=node, containers=[NS(resources=resources)]),
    )


class FakeCore:
    def list_node(self) -> NS:
        return NS(
            items=[_node("a", 4), _node("b", 4, ready=False), _node("c", 4, unschedulable=True)]
        )

    def list_pod_for_all_namespaces(self, field_selector: str) -> NS:
        assert field_selector == "status.phase=Running"
        return NS(items=[_pod("a", 1), _pod("a", 2, {"flexjob.dev/job-name": "mine"})])


def test_kubernetes_nodes_are_ready_schedulable_ones_minus_other_workloads() -> None:
    (node,) = KubernetesNodes(FakeCore()).nodes()
    assert node.name == "a"
    assert node.free.gpu == 3  # the flexjob pod is the policy's to move; the other one is not
