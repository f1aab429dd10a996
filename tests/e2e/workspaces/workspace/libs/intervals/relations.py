"""Metamorphic relations of merge_ranges, run on parent and head."""

SUBJECT = "intervals:merge_ranges"

RELATIONS = [
    {"id": "R_perm", "inputs": [[[4, 6], [0, 1], [2, 3]], [[0, 4], [3, 7]]],
     "transform": lambda x: list(reversed(x)), "compare": "equal"},
    {"id": "R_cover", "inputs": [[[0, 4], [3, 7], [9, 12]]],
     "transform": None,
     "compare": lambda out, x: (out[0][0], out[-1][1])
     == (min(a for a, _ in x), max(b for _, b in x))},
]
