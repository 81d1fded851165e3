"""The Pollux-like workload: its shape, and the policies on a small slice of it."""

from flexjob.scheduler.registry import load_policy
from flexjob.scheduler.simulator import ClusterConfig, simulate
from flexjob.scheduler.workloads import MODELS, pollux_trace

from .day_trace import day_of_jobs


def test_the_workload_has_160_jobs_of_six_models_over_eight_hours() -> None:
    jobs, kinds = day_of_jobs(lambda: pollux_trace(seed=3), {m.name for m in MODELS})
    assert (
        kinds["cifar10"] + kinds["ncf"] > kinds["bert"] + kinds["deepspeech2"] > kinds["imagenet"]
    )
    assert all(j.model().adaptive for j in jobs)
    assert not any(j.model().adaptive for j in pollux_trace(20, seed=3, adaptive=False))


def test_on_a_slice_every_policy_finishes_and_goodput_beats_static() -> None:
    jobs = pollux_trace(24, seed=1, hours=1.0)
    cluster = ClusterConfig(nodes=4, gpus_per_node=4)
    results = {
        p: simulate(jobs, load_policy(p), cluster) for p in ("static", "tiresias", "goodput")
    }
    assert not any(r.unfinished for r in results.values())
    assert results["goodput"].avg_jct < results["static"].avg_jct
    assert results["goodput"].decision_times and results["static"].restarts == 0
