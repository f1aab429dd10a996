"""What import statements bind (pysource/imports.py), the one reading every lane starts from."""

from __future__ import annotations

import ast

import pytest

from oracle_gate.pysource.imports import import_origins

CASES = {
    "import os": [("os", "os")],
    "import os.path": [("os", "os")],
    "import os.path as p": [("p", "os.path")],
    "from os import write as w, read": [("w", "os.write"), ("read", "os.read")],
    "from os.path import join": [("join", "os.path.join")],
    # a relative import names no module outside the package; a star import no name
    "from . import sibling": [],
    "from .. import json": [],
    "from json import *": [],
    "x = os": [],
}


@pytest.mark.parametrize("source", sorted(CASES))
def test_each_name_an_import_binds_is_read_with_its_origin(source: str) -> None:
    assert list(import_origins(ast.parse(source).body)) == CASES[source]


def test_only_the_statements_given_are_read() -> None:
    tree = ast.parse("import os\n\ndef f():\n    import json as j\n")
    assert dict(import_origins(tree.body)) == {"os": "os"}
    assert dict(import_origins(ast.walk(tree))) == {"os": "os", "j": "json"}
