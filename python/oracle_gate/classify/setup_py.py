"""setup.py judged by what changed: only the values of ``setup()``'s distribution keywords
may move without it being harness (a version, classifiers, install_requires, ...), and
only as literals, the version an imported module gives (``pkg.__version__``), or what a
build helper the root settings call tooling returns (``versioneer.get_version()``)."""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from dataclasses import dataclass

from oracle_gate.classify.import_time import statements
from oracle_gate.classify.module_names import module_names
from oracle_gate.classify.python import is_literal
from oracle_gate.classify.sections import ENTRY_GROUP, Effect, ini_sections
from oracle_gate.errors import SurfaceError
from oracle_gate.pysource.imports import bound_name
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
# setup() keywords whose value only a build helper may give (versioneer's command classes):
# a literal one names classes setup.py defines, which is code.
_SETUP_HELPED = frozenset({"cmdclass"})


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


@dataclass(frozen=True)
class _Packaging:
    """Which values of setup()'s keywords are packaging, in one setup.py.

    ``imported`` holds the names its top-level ``import``s alone bind (name -> module);
    ``is_helper`` says whether a module is a build helper the root settings call tooling.
    """

    imported: dict[str, str]
    is_helper: Callable[[str], bool]

    def value(self, keyword: ast.keyword) -> bool:
        value = keyword.value
        if keyword.arg in _SETUP_PACKAGING and is_literal(value):
            return True
        if keyword.arg == "entry_points" and is_literal(value):
            return _entry_points_literal(value) is None  # no pytest11 group: scripts only
        if keyword.arg == "version" and self._module_attribute(value, "__version__"):
            return True  # the package's own version, read at build time
        if keyword.arg in _SETUP_PACKAGING | _SETUP_HELPED:
            return self._helper_call(value)
        return False

    def _module_of(self, node: ast.expr) -> str | None:
        return self.imported.get(node.id) if isinstance(node, ast.Name) else None

    def _module_attribute(self, node: ast.expr, name: str) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == name
            and self._module_of(node.value) is not None
        )

    def _helper_call(self, node: ast.expr) -> bool:
        """``helper.function(literal, ...)`` of a tooling module ``helper``."""
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            return False
        module = self._module_of(node.func.value)
        arguments = [*node.args, *(k.value for k in node.keywords)]
        return (
            module is not None
            and self.is_helper(module)
            and all(is_literal(a) for a in arguments)
            and all(k.arg is not None for k in node.keywords)
        )


class _Blanked(ast.NodeTransformer):
    """The tree without ``setup()``'s packaging keywords, and with literal
    ``entry_points=`` reduced to their ``pytest11`` group."""

    def __init__(self, packaging: _Packaging) -> None:
        self.packaging = packaging

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if not _is_setup_call(node):
            return node
        # a packaging keyword added or dropped is packaging too: it leaves the tree whole
        node.keywords = [k for k in node.keywords if not self.packaging.value(k)]
        for keyword in node.keywords:
            if keyword.arg == "entry_points" and is_literal(keyword.value):
                keyword.value = ast.Constant(repr(_entry_points_literal(keyword.value)))
        return node


def _names(tree: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _without_imports_of(tree: ast.Module, dropped: set[str]) -> None:
    """Drop the top-level imports of the ``dropped`` names, which only packaging values used:
    which module gives the version is the version's business, not code of its own."""
    body: list[ast.stmt] = []
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            statement.names = [a for a in statement.names if bound_name(a) not in dropped]
            if not statement.names:
                continue
        body.append(statement)
    tree.body = body


def _setup_meaning(text: bytes, is_helper: Callable[[str], bool]) -> str | None:
    try:
        tree = parse_python(text, "setup.py")
    except SurfaceError:
        return None  # nothing can be read from it: the caller judges setup.py as a whole
    # _Blanked rewrites the tree it visits, and parse_python's tree is every caller's
    tree = copy.deepcopy(tree)
    imported = module_names(tree, statements(tree.body, into_classes=True)).imported
    used = _names(tree)
    _Blanked(_Packaging(imported, is_helper)).visit(tree)
    _without_imports_of(tree, (used - _names(tree)) & imported.keys())
    return ast.dump(tree)


def setup_py_effect(
    before: bytes | None, after: bytes | None, *, is_helper: Callable[[str], bool]
) -> Effect:
    """A ``setup.py`` change: packaging when only the packaging values of ``setup()``'s
    distribution keywords moved (version, classifiers, install_requires, ...): literals,
    an imported module's ``__version__``, or a call with literal arguments of a build
    helper (``is_helper(module)``: tooling by the root settings) for those keywords or
    ``cmdclass``.

    Anything else is harness: setup.py is Python that runs whatever it holds when
    it is built, installed or imported, and a ``pytest11`` entry point registers a
    plugin. A side that is missing or does not parse is harness.
    """
    if before is None or after is None:
        return Effect(True, "setup.py added or deleted")
    old, new = _setup_meaning(before, is_helper), _setup_meaning(after, is_helper)
    if old is None or new is None:
        return Effect(True, "setup.py does not parse as Python: judged as a whole")
    if old != new:
        return Effect(True, "setup.py code changed beyond setup()'s packaging keywords")
    return Effect(False, "only packaging keywords of setup() changed")
