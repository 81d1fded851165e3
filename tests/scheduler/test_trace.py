from pathlib import Path

import pytest

from flexjob.scheduler.trace import TraceError, generate_trace, read_trace, write_trace


def test_generated_trace_round_trips_through_csv(tmp_path: Path) -> None:
    jobs = generate_trace(20, seed=3)
    write_trace(jobs, tmp_path / "t.csv")
    again = read_trace(tmp_path / "t.csv")
    assert [j.id for j in again] == [j.id for j in jobs]
    assert again[5].work == pytest.approx(jobs[5].work)


def test_generator_is_deterministic_for_a_seed() -> None:
    assert generate_trace(10, seed=5) == generate_trace(10, seed=5)


def test_optional_columns_take_their_defaults(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,submit_time,work\na,0,100\n")
    (job,) = read_trace(path)
    assert (job.replicas, job.min_replicas, job.top, job.preemptible) == (1, 1, 1, True)


def test_bad_value_error_names_the_line_and_the_column(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,submit_time,work\na,0,100\nb,-5,100\n")
    with pytest.raises(TraceError, match=r"line 3: submit_time"):
        read_trace(path)


def test_unknown_column_is_rejected_with_the_allowed_ones(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,submit_time,work,gpu\na,0,100,1\n")
    with pytest.raises(TraceError, match=r"unknown columns \['gpu'\].*allowed: id"):
        read_trace(path)


def test_replicas_outside_the_bounds_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,submit_time,work,replicas,max_replicas\na,0,100,4,2\n")
    with pytest.raises(TraceError, match="replicas must be within"):
        read_trace(path)
