import pytest

from flexjob.core.training.splitters import FileRange, FileSplitter, RangeSplitter, parse_file_entry


def test_range_splitter_covers_every_index_once_with_a_short_last_shard() -> None:
    shards = RangeSplitter(10, 4).shards(0)
    assert [s.sample_indices() for s in shards] == [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9)]


def test_shuffled_range_splitter_is_a_permutation_that_changes_by_epoch() -> None:
    splitter = RangeSplitter(50, 8, shuffle=True, seed=3)
    e0 = [i for s in splitter.shards(0) for i in s.sample_indices()]
    e1 = [i for s in splitter.shards(1) for i in s.sample_indices()]
    assert sorted(e0) == sorted(e1) == list(range(50))
    assert e0 != e1


def test_shuffle_is_reproducible_from_the_seed() -> None:
    a = RangeSplitter(30, 7, shuffle=True, seed=5).shards(2)
    b = RangeSplitter(30, 7, shuffle=True, seed=5).shards(2)
    assert list(a) == list(b)


def test_file_splitter_never_spans_two_files_and_numbers_samples_across_files() -> None:
    splitter = FileSplitter((FileRange("a", 0, 5), FileRange("b", 10, 13)), shard_size=3)
    shards = splitter.shards(0)
    assert [(s.name, s.start, s.end) for s in shards] == [
        ("a", 0, 3),
        ("a", 3, 5),
        ("b", 10, 13),
    ]
    assert [i for s in shards for i in s.sample_indices()] == list(range(8))
    assert splitter.num_shards == 3 and splitter.num_samples == 8


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("data/part-0.csv:100", FileRange("data/part-0.csv", 0, 100)),
        ("db.table:20-40", FileRange("db.table", 20, 40)),
        ("s3://bucket/whole.bin", FileRange("s3://bucket/whole.bin", 0, 1)),
    ],
)
def test_file_entries_parse_rows_ranges_and_whole_files(entry: str, expected: FileRange) -> None:
    assert parse_file_entry(entry) == expected


def test_bad_shard_size_names_the_field() -> None:
    with pytest.raises(ValueError, match="shard_size must be a positive integer, got 0"):
        RangeSplitter(10, 0)


def test_empty_row_range_is_rejected_with_the_file_name() -> None:
    with pytest.raises(ValueError, match="file 't'"):
        parse_file_entry("t:5-5")


def test_range_shards_are_made_on_demand_and_match_the_contiguous_split() -> None:
    shards = RangeSplitter(10, 4).shards(0)
    assert len(shards) == 3
    assert [(s.start, s.end) for s in shards] == [(0, 4), (4, 8), (8, 10)]
    assert shards[-1] == shards[2]
    assert [(s.start, s.end) for s in shards[1:]] == [(4, 8), (8, 10)]
    with pytest.raises(IndexError):
        shards[3]
