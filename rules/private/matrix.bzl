"""The matrix checks of the `oracle_gate` macro: a Starlark port of config/schema.py.

Runs in the loading phase, where `native.glob` can tell which package files an
entry names. Starlark has no exceptions, so each check returns its result
with the first problem found (a message from schema.bzl) or None; the rule
reports that problem at analysis time with the target's label. The order of
the checks, and so the first problem reported, is the Python readers'.
"""

load(
    ":schema.bzl",
    "BUDGET_KEYS",
    "GLOB_PROBLEMS",
    "ID_CHARS",
    "ID_FIRST",
    "MESSAGES",
    "MODULE_CHARS",
    "NAME_CHARS",
    "NAME_FIRST",
    "ORACLE_KINDS",
)

# Marks the structs invariant() returns, so the macro can tell a row from a
# dict or a typo.
INVARIANT_KIND = "oracle_gate_invariant"

def message(key, *args):
    """`MESSAGES[key]` filled with `args` (strings)."""
    return MESSAGES[key] % tuple(args)

def shown(value):
    """How every reader renders a found value: `'text'`, `5`, `2.5`, `a list`..."""
    kind = type(value)
    if kind == "string":
        return "'%s'" % value
    if kind in ("int", "float", "bool", "NoneType"):
        return repr(value)
    if kind in ("list", "tuple"):
        return "a list"
    if kind == "dict":
        return "a mapping"
    return "a %s" % kind

def _glob_problem(entry):
    if not entry:
        return GLOB_PROBLEMS["empty"]
    if entry.startswith("/"):
        return GLOB_PROBLEMS["absolute"]
    segments = entry.rstrip("/").split("/")
    for segment in segments:
        if segment in ("", ".", ".."):
            return GLOB_PROBLEMS["segment"]
    for segment in segments:
        if "**" in segment and segment != "**":
            return GLOB_PROBLEMS["star_star"]
    return None

def path_problem(entry):
    """Why `entry` is not a package-relative path or glob pattern, or None."""
    if entry.startswith(":") or entry.startswith("@"):
        return MESSAGES["label"]
    return _glob_problem(entry)

def _only(text, first, rest):
    if not text or text[0] not in first:
        return False
    for i in range(1, len(text)):
        if text[i] not in rest:
            return False
    return True

def _ref_module(ref):
    module, colon, name = ref.partition(":")
    well_formed = (
        colon == ":" and
        ":" not in name and
        module.endswith(".py") and
        _only(module, MODULE_CHARS, MODULE_CHARS) and
        path_problem(module) == None and
        _only(name, NAME_FIRST, NAME_CHARS)
    )
    return module if well_formed else None

def is_pattern(entry):
    return "*" in entry or "?" in entry or entry.endswith("/")

def match(entry):
    """The package files `entry` names, with `glob()` semantics ('dir/' = all below)."""
    if not is_pattern(entry):
        return native.glob([entry], allow_empty = True)
    return native.glob([entry + "**" if entry.endswith("/") else entry], allow_empty = True)

def _strings(value, what):
    if value == None:
        return [], None
    if type(value) not in ("list", "tuple"):
        return None, message("list", what, shown(value))
    for item in value:
        if type(item) != "string":
            return None, message("string", what, shown(item))
    return list(value), None

def _paths(value, what, package):
    """(entries, the files they match, problem)."""
    entries, problem = _strings(value, what)
    if problem != None:
        return None, None, problem
    files = []
    for entry in entries:
        problem = path_problem(entry)
        if problem != None:
            return None, None, message("path", what, entry, problem)
        matches = match(entry)
        if not matches:
            hint = "" if is_pattern(entry) else MESSAGES["no_match_hint"]
            return None, None, message("no_match", what, entry, package, hint)
        files.extend(matches)
    return entries, files, None

def _refs(value, what, package):
    """(references, their module files, problem)."""
    refs, problem = _strings(value, what)
    if problem != None:
        return None, None, problem
    modules = []
    for ref in refs:
        module = _ref_module(ref)
        if module == None:
            return None, None, message("ref", what, ref)
        if not match(module):
            return None, None, message("ref_missing", what, ref, module, package)
        modules.append(module)
    return refs, modules, None

def _budget(value, row_id):
    """({examples, seconds} as given, problem)."""
    if value == None:
        return {}, None
    if type(value) != "dict":
        return None, message("budget", row_id, shown(value))
    for key in value:
        if key not in BUDGET_KEYS:
            return None, message("budget_key", row_id, shown(key))
    examples = value.get("examples", 1)
    if type(examples) != "int" or examples < 1:
        return None, message("examples", row_id, shown(examples))
    seconds = value.get("seconds", 1)
    if type(seconds) not in ("int", "float") or seconds <= 0:
        return None, message("seconds", row_id, shown(seconds))
    return {key: value[key] for key in BUDGET_KEYS if key in value}, None

def _row(index, row, seen, package):
    """(row as a dict of checked fields, the files it names, problem)."""
    if type(row) != "struct" or getattr(row, "kind", None) != INVARIANT_KIND:
        return None, None, message("row_call", str(index))
    row_id = row.id
    if row_id == None:
        return None, None, message("no_id", str(index))
    if type(row_id) != "string" or not _only(row_id, ID_FIRST, ID_CHARS):
        return None, None, message("bad_id", shown(row_id))
    if row_id in seen:
        return None, None, message("twice", row_id)
    seen[row_id] = True
    prefix = "row '%s': " % row_id
    globs, files, problem = _paths(row.globs, prefix + "globs", package)
    if problem != None:
        return None, None, problem
    if not globs:
        return None, None, message("no_globs", row_id)
    checked = {"id": row_id, "globs": globs}
    for kind in ORACLE_KINDS:
        checked[kind], modules, problem = _refs(getattr(row, kind), prefix + kind, package)
        if problem != None:
            return None, None, problem
        files = files + modules
    checked["fixtures"], fixture_files, problem = _paths(row.fixtures, prefix + "fixtures", package)
    if problem != None:
        return None, None, problem
    checked["fixture_files"] = sorted({path: True for path in fixture_files}.keys())
    checked["budget"], problem = _budget(row.budget, row_id)
    if problem != None:
        return None, None, problem
    return checked, files + fixture_files, None

def check_matrix(owners, tests, fixtures, rows, package):
    """Owners, tests, fixtures and rows checked in the Python readers' order.

    Returns:
      (matrix, files, problem): `matrix` holds the checked fields (and the files
      `tests` and `fixtures` match); `files` every package file the matrix
      names; `problem` the first mistake's message, or None (then the others
      are None).
    """
    owners, problem = _strings(owners, "owners")
    if problem != None:
        return None, None, problem
    tests, test_files, problem = _paths(tests, "tests", package)
    if problem != None:
        return None, None, problem
    fixtures, fixture_files, problem = _paths(fixtures, "fixtures", package)
    if problem != None:
        return None, None, problem
    if rows != None and type(rows) not in ("list", "tuple"):
        return None, None, message("rows", shown(rows))
    checked_rows = []
    files = test_files + fixture_files
    seen = {}
    for index, row in enumerate(rows or []):
        checked, row_files, problem = _row(index, row, seen, package)
        if problem != None:
            return None, None, problem
        checked_rows.append(checked)
        files = files + row_files
    matrix = struct(
        owners = owners,
        tests = tests,
        test_files = sorted({path: True for path in test_files}.keys()),
        fixtures = fixtures,
        fixture_files = sorted({path: True for path in fixture_files}.keys()),
        rows = checked_rows,
    )
    return matrix, sorted({path: True for path in files}.keys()), None
