from scheduler import busy_windows, export


def test_overlapping_meetings_form_one_window():
    meetings = [{"start": 9, "end": 11}, {"start": 10, "end": 12}]
    assert busy_windows(meetings) == [[9, 12]]


def test_no_meetings_no_windows():
    assert busy_windows([]) == []


def test_export_writes_one_line_per_window():
    assert export([{"start": 1, "end": 2}, {"start": 5, "end": 6}]).count("\n") == 2
