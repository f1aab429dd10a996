"""Equivalence classes and boundaries of merge_ranges."""

SUBJECT = "intervals:merge_ranges"

PARTITIONS = [
    {"id": "P001", "cls": "empty", "kind": "boundary", "input": [],
     "relation": "empty input yields empty output",
     "contract": lambda out: out == [], "assumptions": ["A001"]},
    {"id": "P002", "cls": "touching", "kind": "boundary", "input": [[0, 2], [2, 4]],
     "relation": "touching ranges stay apart",
     "contract": lambda out: out == [[0, 2], [2, 4]], "assumptions": []},
    {"id": "P003", "cls": "unsorted", "kind": "representative", "input": [[4, 6], [0, 1]],
     "relation": "unsorted input is sorted before merging",
     "contract": lambda out: out == [[0, 1], [4, 6]], "assumptions": []},
    {"id": "P009", "cls": "inverted", "kind": "invalid", "input": [[5, 1]],
     "relation": "inverted range raises, not silently swapped",
     "contract": None, "assumptions": ["A001"]},
]
