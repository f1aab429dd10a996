"""Merge overlapping closed integer ranges."""


def merge_ranges(ranges):
    """Merge ranges that overlap; ranges that only touch ([0, 2], [2, 4]) stay apart."""
    merged = []
    for start, end in sorted(ranges):
        if start > end:
            raise ValueError(f"inverted range [{start}, {end}]")
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged
