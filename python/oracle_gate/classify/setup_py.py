"""setup.py judged by what changed: only literal values of ``setup()``'s distribution keywords
may move without it being harness (a version, classifiers, install_requires, ...)."""

from __future__ import annotations

import ast
import copy

from oracle_gate.classify.python import is_literal
from oracle_gate.classify.sections import ENTRY_GROUP, Effect, ini_sections
from oracle_gate.errors import SurfaceError
from oracle_gate.pysource.parse import parse_python

__all__ = ["setup_py_effect"]

# setup() keywords that describe the distribution; a literal value of one may change.
_SETUP_PACKAGING = frozenset(
    {
        "name",
        "version",
        "description",
        "long_description",
        "long_description_content_type",
        "author",
        "author_email",
        "maintainer",
        "maintainer_email",
        "url",
        "download_url",
        "project_urls",
        "license",
        "license_file",
        "license_files",
        "classifiers",
        "keywords",
        "platforms",
        "python_requires",
        "install_requires",
        "extras_require",
        "tests_require",
        "setup_requires",
        "zip_safe",
        "include_package_data",
        "package_data",
        "exclude_package_data",
        "packages",
        "package_dir",
        "py_modules",
        "data_files",
        "provides",
        "obsoletes",
        "requires",
    }
)
_PLACEHOLDER = "<packaging literal>"


def _is_setup_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name == "setup"


def _entry_points_literal(node: ast.expr) -> object:
    """The ``pytest11`` group of a literal ``entry_points=`` value (a dict, or INI text);
    a value of another shape, or text that is not INI, is kept whole."""
    value = ast.literal_eval(node)
    if isinstance(value, str):
        sections = ini_sections(value.encode())
        return value if sections is None else sections.get(ENTRY_GROUP)
    return value.get(ENTRY_GROUP) if isinstance(value, dict) else value


class _Blanked(ast.NodeTransformer):
    """The tree with every packaging keyword's literal value of ``setup()`` blanked, and
    literal ``entry_points=`` reduced to their ``pytest11`` group."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if not _is_setup_call(node):
            return node
        for keyword in node.keywords:
            if keyword.arg in _SETUP_PACKAGING and is_literal(keyword.value):
                keyword.value = ast.Constant(_PLACEHOLDER)
            elif keyword.arg == "entry_points" and is_literal(keyword.value):
                keyword.value = ast.Constant(repr(_entry_points_literal(keyword.value)))
        return node


def _setup_meaning(text: bytes) -> str | None:
    try:
        tree = parse_python(text, "setup.py")
    except SurfaceError:
        return None  # nothing can be read from it: the caller judges setup.py as a whole
    # _Blanked rewrites the tree it visits, and parse_python's tree is every caller's
    return ast.dump(_Blanked().visit(copy.deepcopy(tree)))


def setup_py_effect(before: bytes | None, after: bytes | None) -> Effect:
    """A ``setup.py`` change: packaging when only literal values of ``setup()``'s
    distribution keywords moved (version, classifiers, install_requires, ...).

    Anything else is harness: setup.py is Python that runs whatever it holds when
    it is built, installed or imported, and a ``pytest11`` entry point registers a
    plugin. A side that is missing or does not parse is harness.
    """
    if before is None or after is None:
        return Effect(True, "setup.py added or deleted")
    old, new = _setup_meaning(before), _setup_meaning(after)
    if old is None or new is None:
        return Effect(True, "setup.py does not parse as Python: judged as a whole")
    if old != new:
        return Effect(True, "setup.py code changed beyond setup()'s literal packaging keywords")
    return Effect(False, "only literal packaging keywords of setup() changed")
