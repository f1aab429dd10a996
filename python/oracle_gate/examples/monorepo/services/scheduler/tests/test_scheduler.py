from scheduler import busy_windows


def test_overlapping_meetings_form_one_window():
    meetings = [{"start": 9, "end": 11}, {"start": 10, "end": 12}]
    assert busy_windows(meetings) == [[9, 12]]


def test_no_meetings_no_windows():
    assert busy_windows([]) == []
