"""Clusters and jobs shared by the policy tests: a fixed cluster and Hypothesis strategies."""

from typing import Any

from hypothesis import strategies as st

from flexjob.core.allocator import GoodputModel, JobInfo, NodeInfo, Resources, ThroughputParams

#: What one replica asks for.
GPU = Resources(gpu=1)


def gpu_job(job_id: str, replicas: int, lo: int = 1, hi: int = 16, **fields: Any) -> JobInfo:
    """A preemptible job of ``GPU`` replicas, ``replicas`` of them asked, ``lo`` to ``hi``
    allowed; ``fields`` set the rest of ``JobInfo`` (``age``, ``speedup``, ...)."""
    defaults: dict[str, Any] = {"preemptible": True, "resources": GPU}
    return JobInfo(job_id, replicas, lo, hi, **{**defaults, **fields})


def free_nodes(nodes: int = 4, gpus: int = 4) -> list[NodeInfo]:
    """``nodes`` free nodes of ``gpus`` GPUs, 32 CPUs and 64 GB each."""
    return [NodeInfo(f"n{i}", Resources(gpu=gpus, cpu=32, memory=64_000)) for i in range(nodes)]


node_lists = st.lists(
    st.builds(
        lambda i, gpu, cpu: NodeInfo(f"n{i}", Resources(gpu=gpu, cpu=float(cpu), memory=64_000)),
        st.just(0),
        st.integers(0, 8),
        st.integers(0, 32),
    ),
    min_size=1,
    max_size=6,
).map(lambda nodes: [NodeInfo(f"n{i}", n.free) for i, n in enumerate(nodes)])


@st.composite
def job_lists(draw: st.DrawFn) -> list[JobInfo]:
    count = draw(st.integers(0, 12))
    jobs = []
    for i in range(count):
        lo = draw(st.integers(0, 3))
        hi = draw(st.integers(max(lo, 1), 8))
        model = GoodputModel(
            ThroughputParams(sync_remote=draw(st.floats(0.0, 0.5))),
            local_batch=draw(st.sampled_from([8.0, 32.0, 128.0])),
            noise_scale=draw(st.one_of(st.none(), st.floats(10.0, 5000.0))),
        )
        jobs.append(
            JobInfo(
                id=f"j{i}",
                replicas=draw(st.integers(lo, hi)),
                min_replicas=lo,
                max_replicas=hi,
                preemptible=draw(st.booleans()),
                resources=Resources(
                    gpu=draw(st.integers(0, 2)),
                    cpu=float(draw(st.integers(0, 4))),
                    memory=draw(st.sampled_from([0, 1000, 8000])),
                ),
                age=draw(st.floats(0.0, 10_000.0)),
                restarts=draw(st.integers(0, 5)),
                speedup=model.speedup,
            )
        )
    return jobs
