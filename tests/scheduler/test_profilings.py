import pytest

from flexjob.core.training.goodput_model import ThroughputParams
from flexjob.scheduler.profilings import goodput_model, read_profilings


def _report(params: ThroughputParams) -> dict[str, object]:
    shapes = [(1, 1), (1, 2), (1, 4), (2, 4), (2, 8)]
    return {
        "steps": [
            {"replicas": n, "nodes": k, "stepTime": params.step_time(k, n, 32.0)} for k, n in shapes
        ],
        "gradNoiseScale": 500.0,
    }


def test_the_model_fitted_from_profilings_predicts_their_step_times() -> None:
    truth = ThroughputParams(sync_remote=0.3)
    model = goodput_model(_report(truth))
    assert model.params.step_time(2, 6, 32.0) == pytest.approx(truth.step_time(2, 6, 32.0))
    assert model.noise_scale == 500.0


def test_bad_step_entries_are_dropped_not_fatal() -> None:
    prof = read_profilings(
        {"steps": [{"replicas": 0, "stepTime": 1}, {"replicas": 1, "stepTime": 0.1}]}
    )
    assert len(prof.steps) == 1


def test_no_profilings_gives_the_prior_model() -> None:
    assert goodput_model({}).params == ThroughputParams()
