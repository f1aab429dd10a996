import json
import pathlib

import pytest
from intervals import merge_ranges

DATA = pathlib.Path(__file__).parent.parent / "testdata" / "ranges"


def test_empty_input_gives_empty_output():
    assert merge_ranges([]) == []


def test_overlapping_ranges_merge():
    assert merge_ranges([[0, 4], [3, 7]]) == [[0, 7]]


def test_touching_ranges_stay_apart():
    assert merge_ranges([[0, 2], [2, 4]]) == [[0, 2], [2, 4]]


def test_inverted_range_raises():
    with pytest.raises(ValueError, match="inverted"):
        merge_ranges([[5, 1]])


@pytest.mark.parametrize("case", sorted(p.name for p in DATA.glob("*.json")))
def test_recorded_cases(case):
    record = json.loads((DATA / case).read_text())
    assert merge_ranges(record["input"]) == record["expected"]
