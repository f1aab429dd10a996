"""The `oracle_gate` macro and the `oracle_gate_test` rule behind it (SPEC §8).

A gate target runs one package's hermetic checks: the fixtures and the
assertion surface of the tests match `oracle_gate.lock`, the ledgers parse,
and each matrix row's one-tree checks (seed replay, known-bad seeds,
partitions, budgeted properties) pass. The rule serialises the matrix declared in BUILD into a JSON manifest
with exactly the `invariants.yaml` schema, and writes a bash launcher that
runs the oracle-gate Python driver, shipped as runfiles, with the system
`python3`. No sh_test, py_test or external rule set is involved, so the rule
loads under WORKSPACE (Bazel 4 to 6) and bzlmod (Bazel 7+).
"""

load(":invariant.bzl", "INVARIANT_KIND")

OracleGateInfo = provider(
    doc = "What an `oracle_gate` target tells the gates that depend on it.",
    fields = {
        "package": "The package directory, relative to its repository root.",
        "manifest": "The JSON manifest `File`: the package's matrix in the invariants.yaml schema.",
        "files": "A depset of every `File` the package declares (tests, fixtures, guarded " +
                 "sources, oracle modules, lock, ledgers, manifest), and those of its " +
                 "transitive deps, so a dependent gate re-runs when a dependency changes.",
    },
)

_LOCK_FILE = "oracle_gate.lock"

# Lock and ledger attributes -> the only file name the driver reads each under.
_FILE_ATTRS = {
    "lock": _LOCK_FILE,
    "seeds": "seeds.jsonl",
    "freeze": "flake_freeze.yaml",
    "assumptions": "assumptions.yaml",
}

_ID_FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_ID_CHARS = _ID_FIRST + "_.-"
_NAME_FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
_NAME_CHARS = _NAME_FIRST + "0123456789"
_MODULE_CHARS = _ID_FIRST + "_./-"

_ORACLE_KINDS = ("properties", "partitions", "relations")
_BUDGET_KEYS = ("examples", "seconds")

# ---------------------------------------------------------------------------
# Loading phase: the macro only gathers data. Every check happens in the rule,
# at analysis time, so each mistake is reported with the target's label.
# ---------------------------------------------------------------------------

def _path_problem(entry):
    """Why `entry` is not a package-relative path or glob pattern, or None."""
    if type(entry) != "string":
        return "must be a string, found %s" % type(entry)
    if not entry:
        return "is empty"
    if entry.startswith("/") or entry.startswith(":") or entry.startswith("@"):
        return "must be a package-relative path or glob pattern, not a label or an absolute path"
    for segment in entry.rstrip("/").split("/"):
        if segment in ("", ".", ".."):
            return "has an empty, '.' or '..' segment"
        if "**" in segment and segment != "**":
            return "uses '**' inside a segment; '**' must be a whole path segment"
    return None

def _is_pattern(entry):
    return "*" in entry or "?" in entry or entry.endswith("/")

def _gather(entries):
    """Each entry with its problem (or None) and the package files it matches.

    Returns `[[entry, problem, [file, ...]], ...]`, or None when `entries` is
    not a list; the rule reports both. Literal paths (what `glob()` returns)
    are looked up in one `glob` call; each pattern gets its own call, so the
    rule can name the one that matched nothing.
    """
    if type(entries) != "list":
        return None
    problems = [_path_problem(entry) for entry in entries]
    literals = [
        entry
        for entry, problem in zip(entries, problems)
        if problem == None and not _is_pattern(entry)
    ]
    existing = {}
    if literals:
        for path in native.glob(literals, allow_empty = True):
            existing[path] = True
    gathered = []
    for entry, problem in zip(entries, problems):
        if problem != None:
            # repr() keeps non-string entries (a Label, a number) JSON-encodable.
            gathered.append([entry if type(entry) == "string" else repr(entry), problem, []])
        elif _is_pattern(entry):
            pattern = entry + "**" if entry.endswith("/") else entry
            gathered.append([entry, None, native.glob([pattern], allow_empty = True)])
        else:
            gathered.append([entry, None, [entry] if entry in existing else []])
    return gathered

def _gather_refs(refs):
    """Oracle references `file.py:NAME`: `[[ref, [module file if it exists]], ...]`."""
    if type(refs) != "list":
        return None
    modules = [
        ref.split(":")[0] if type(ref) == "string" and ref.count(":") == 1 else None
        for ref in refs
    ]
    exists = {}
    for module, problem, matches in _gather([m for m in modules if m != None]):
        if problem == None and matches:
            exists[module] = True
    return [
        [ref if type(ref) == "string" else repr(ref), [module] if module in exists else []]
        for ref, module in zip(refs, modules)
    ]

def _gather_row(row):
    if type(row) != "struct" or getattr(row, "kind", None) != INVARIANT_KIND:
        return {"invariant": False, "found": type(row)}
    budget_ok = row.budget == None or type(row.budget) == "dict"
    gathered = {
        "invariant": True,
        "id": row.id,
        "globs": _gather(row.globs),
        "fixtures": _gather(row.fixtures),
        "budget": row.budget if budget_ok else type(row.budget),
        "budget_ok": budget_ok,
    }
    for kind in _ORACLE_KINDS:
        gathered[kind] = _gather_refs(getattr(row, kind))
    return gathered

def _is_label(value):
    return value.startswith("//") or value.startswith("@") or value.startswith(":")

def _local_file(value, expected_name):
    """A lock or ledger argument: `(attribute value, [given, reason] or None)`.

    Labels go to the rule attribute, which checks their package at analysis
    time. A path that is not `expected_name` at the package root, or an
    explicitly named file that does not exist, goes to the rule as data, so
    it can fail with the target's label. A lock that does not exist yet is
    not an error here: the launcher reports it MISSING with the command that
    writes it.
    """
    implicit = value == None
    if implicit:
        value = expected_name
    if type(value) != "string":
        return None, [repr(value), "type"]
    if _is_label(value):
        return value, None
    if _path_problem(value) != None:
        return None, [value, "outside"]
    if value != expected_name:
        return None, [value, "name"]
    if native.glob([value], allow_empty = True):
        return value, None
    if implicit or expected_name == _LOCK_FILE:
        return None, None
    return None, [value, "missing"]

def oracle_gate(
        name,
        rows = [],
        tests = [],
        fixtures = [],
        lock = _LOCK_FILE,
        seeds = None,
        freeze = None,
        assumptions = None,
        owners = [],
        deps = [],
        **kwargs):
    """Declares a package's invariant matrix and its `bazel test` gate.

    `bazel test //pkg:<name>` checks that every fixture and every test's
    assertion surface still match `oracle_gate.lock`, that the ledgers
    parse, and runs each row's one-tree checks (seed replay, known-bad seeds,
    partitions, budgeted properties); it writes JUnit to `$XML_OUTPUT_FILE`. `bazel build //pkg:<name>`
    writes the matrix as `<name>.matrix.json`, in the invariants.yaml schema,
    for `oracle-gate lock --write --matrix`.

    Args:
      name: the target name, usually `oracle_gate`.
      rows: the matrix rows, each an `invariant(...)`.
      tests: the test files whose assertion surface is locked: package-relative
        paths (for example from `glob()`) or glob patterns.
      fixtures: the fixture files whose BLAKE3 digests are locked: paths or
        patterns, as for `tests`.
      lock: the package's lockfile; must be `oracle_gate.lock` at the root of
        this package. When it does not exist yet the test fails and says how
        to write it.
      seeds: the `seeds.jsonl` ledger; by default the package's
        `seeds.jsonl` when there is one.
      freeze: the `flake_freeze.yaml` ledger; by default the package's when
        there is one.
      assumptions: the `assumptions.yaml` register; by default the
        package's when there is one.
      owners: the owners whose review an oracle change needs, for example
        `["@intervals-team"]`.
      deps: the `oracle_gate` targets of the packages this one depends on.
        Their files become inputs of this gate, so it re-runs (and is not
        served from cache) when a dependency changes.
      **kwargs: common test attributes such as `size`, `timeout`, `tags`
        and `visibility`. The `oracle_gate` tag is always added, so
        `bazel test --config=oracle_gate //...` selects every gate; the
        visibility defaults to public so that other gates can depend on it.
    """
    tags = kwargs.pop("tags", [])
    if "oracle_gate" not in tags:
        tags = tags + ["oracle_gate"]
    visibility = kwargs.pop("visibility", ["//visibility:public"])

    files = {}
    problems = {}
    given = {"lock": lock, "seeds": seeds, "freeze": freeze, "assumptions": assumptions}
    for attr_name, expected_name in _FILE_ATTRS.items():
        files[attr_name], problems[attr_name] = _local_file(given[attr_name], expected_name)

    declared = {
        "owners": owners,
        "tests": _gather(tests),
        "fixtures": _gather(fixtures),
        "rows": [_gather_row(row) for row in rows] if type(rows) == "list" else None,
        "files": problems,
    }

    srcs = {}
    groups = [declared["tests"], declared["fixtures"]]
    for row in declared["rows"] or []:
        if row["invariant"]:
            groups.extend([row["globs"], row["fixtures"]])
            for kind in _ORACLE_KINDS:
                groups.append([[ref, None, matches] for ref, matches in row[kind] or []])
    for group in groups:
        for _, _, matches in group or []:
            for path in matches:
                srcs[path] = True

    oracle_gate_test(
        name = name,
        matrix = json.encode(declared),
        srcs = sorted(srcs.keys()),
        lock = files["lock"],
        seeds = files["seeds"],
        freeze = files["freeze"],
        assumptions = files["assumptions"],
        deps = deps,
        tags = tags,
        visibility = visibility,
        **kwargs
    )

# ---------------------------------------------------------------------------
# Analysis phase: validate, write the manifest and the launcher.
# ---------------------------------------------------------------------------

def _display(label):
    """`//pkg:name` for the main repository, `@repo//pkg:name` otherwise.

    str(label) differs between Bazel versions (`@//`, `@@//`), and messages
    should read the same everywhere.
    """
    if label.workspace_name:
        return "@%s//%s:%s" % (label.workspace_name, label.package, label.name)
    return "//%s:%s" % (label.package, label.name)

def _only_chars(text, first, rest):
    if not text or text[0] not in first:
        return False
    for i in range(1, len(text)):
        if text[i] not in rest:
            return False
    return True

def _files(where, what, gathered, package):
    """Validated entries as written, and the sorted files they match."""
    if gathered == None:
        fail("%s: %s must be a list of package-relative paths or glob patterns" % (where, what))
    entries = []
    files = {}
    for entry, problem, matches in gathered:
        if problem != None:
            fail("%s: %s entry %s %s" % (where, what, repr(entry), problem))
        if not matches:
            hint = "" if _is_pattern(entry) else "; to name everything below a directory, end it with '/'"
            fail("%s: %s entry '%s' matches no file in package '%s'%s" % (where, what, entry, package, hint))
        entries.append(entry)
        for path in matches:
            files[path] = True
    return entries, sorted(files.keys())

def _refs(where, what, gathered, package):
    if gathered == None:
        fail("%s: %s must be a list of 'file.py:NAME' strings" % (where, what))
    refs = []
    for ref, matches in gathered:
        module, _, name = ref.partition(":")
        well_formed = (
            ref.count(":") == 1 and
            module.endswith(".py") and
            _only_chars(module, _MODULE_CHARS, _MODULE_CHARS) and
            _path_problem(module) == None and
            _only_chars(name, _NAME_FIRST, _NAME_CHARS)
        )
        if not well_formed:
            fail("%s: %s entry %s is not of the form 'file.py:NAME'" % (where, what, repr(ref)))
        if not matches:
            fail("%s: %s entry '%s' names %s, which is not a file in package '%s'" % (where, what, ref, module, package))
        refs.append(ref)
    return refs

def _budget(where, row):
    if not row["budget_ok"]:
        fail("%s: budget must be a dict like {\"examples\": 80, \"seconds\": 20}, found %s" % (where, row["budget"]))
    budget = row["budget"]
    if budget == None:
        return None
    for key in budget:
        if key not in _BUDGET_KEYS:
            fail("%s: unknown budget key %s; expected examples, seconds" % (where, repr(key)))
    examples = budget.get("examples")
    if examples != None and (type(examples) != "int" or examples < 1):
        fail("%s: budget examples must be an integer of at least 1, found %s" % (where, repr(examples)))
    seconds = budget.get("seconds")
    if seconds != None and (type(seconds) not in ("int", "float") or seconds <= 0):
        fail("%s: budget seconds must be a positive number, found %s" % (where, repr(seconds)))
    return {key: budget[key] for key in _BUDGET_KEYS if key in budget}

def _rows(label, declared_rows, package):
    if declared_rows == None:
        fail("%s: rows must be a list of invariant(...) rows" % label)
    rows = []
    seen = {}
    for index, row in enumerate(declared_rows):
        if not row["invariant"]:
            fail("%s: rows[%d] is a %s, not an invariant(...)" % (label, index, row["found"]))
        row_id = row["id"]
        if row_id == None:
            fail("%s: rows[%d] has no id; every invariant(...) needs an id unique in the package" % (label, index))
        if type(row_id) != "string" or not _only_chars(row_id, _ID_FIRST, _ID_CHARS):
            fail("%s: row id %s may only hold letters, digits, _ . - (and must start with a letter or digit)" % (label, repr(row_id)))
        if row_id in seen:
            fail("%s: row id '%s' is declared twice; row ids must be unique in a package" % (label, row_id))
        seen[row_id] = True
        where = "%s: row '%s'" % (label, row_id)
        globs, _ = _files(where, "globs", row["globs"], package)
        if not globs:
            fail("%s has no globs; every row guards at least one production path" % where)
        _, fixtures = _files(where, "fixtures", row["fixtures"], package)
        entry = {"id": row_id, "globs": globs, "fixtures": fixtures}
        for kind in _ORACLE_KINDS:
            entry[kind] = _refs(where, kind, row[kind], package)
        budget = _budget(where, row)
        if budget != None:
            entry["budget"] = budget
        rows.append(entry)
    return rows

def _in_package(ctx, label, attr_name, expected_name, problem):
    """The File of a lock or ledger attribute, checked to be `expected_name` at the package root.

    `problem` is what the macro found wrong with a path it could not pass on
    as a label: `[given, reason]`, or None.
    """
    package = ctx.label.package
    if problem != None:
        given, reason = problem
        # A "type" problem's `given` is already the repr of the value.
        shown = given if reason in ("type", "missing") else repr(given)
    else:
        target = getattr(ctx.attr, attr_name)
        if target == None:
            return None
        shown = _display(target.label)
        file = getattr(ctx.file, attr_name)
        if target.label.workspace_name != ctx.label.workspace_name or target.label.package != package:
            reason = "outside"
        elif not file.is_source:
            reason = "generated"
        elif target.label.name != expected_name:
            reason = "name"
        else:
            return file
    if reason == "outside":
        fail("%s: %s %s is outside the package '%s'; each package owns its own %s at its root" % (
            label,
            attr_name,
            shown,
            package,
            expected_name,
        ))
    if reason == "missing":
        fail("%s: %s '%s' does not exist in package '%s'" % (label, attr_name, shown, package))
    if reason == "generated":
        fail("%s: %s %s is generated; it must be the source file %s that humans review" % (
            label,
            attr_name,
            shown,
            expected_name,
        ))
    fail("%s: %s must be the file '%s' at the root of package '%s', found %s" % (
        label,
        attr_name,
        expected_name,
        package,
        shown,
    ))

def _rlocation(ctx, file):
    """The path of `file` below the runfiles directory."""
    if file.short_path.startswith("../"):
        return file.short_path[len("../"):]
    return ctx.workspace_name + "/" + file.short_path

def _shell_quote(text):
    return "'" + text.replace("'", "'\\''") + "'"

def _oracle_gate_test_impl(ctx):
    label = _display(ctx.label)
    package = ctx.label.package
    declared = json.decode(ctx.attr.matrix)

    owners = declared["owners"]
    if type(owners) != "list" or [o for o in owners if type(o) != "string"]:
        fail("%s: owners must be a list of strings such as \"@intervals-team\"" % label)
    _, test_files = _files(label, "tests", declared["tests"], package)
    _, fixture_files = _files(label, "fixtures", declared["fixtures"], package)
    rows = _rows(label, declared["rows"], package)

    deps = []
    for dep in ctx.attr.deps:
        if dep.label.workspace_name != ctx.label.workspace_name:
            fail("%s: deps entry %s is in another repository; gate deps must be in this one" % (label, _display(dep.label)))
        deps.append("//%s:%s" % (dep.label.package, dep.label.name))

    problems = declared["files"]
    files = {
        attr_name: _in_package(ctx, label, attr_name, file_name, problems[attr_name])
        for attr_name, file_name in _FILE_ATTRS.items()
    }

    # Exactly the invariants.yaml schema, so oracle_gate.matrix.parse_matrix
    # reads it. tests and fixtures are the files the declared entries match
    # (literal paths are valid globs); row globs stay as written, because
    # they guard production paths that later patches may add.
    manifest = ctx.actions.declare_file(ctx.label.name + ".matrix.json")
    ctx.actions.write(
        output = manifest,
        content = json.encode_indent({
            "version": 1,
            "owners": owners,
            "tests": test_files,
            "fixtures": fixture_files,
            "deps": sorted(deps),
            "rows": rows,
        }, indent = "  ") + "\n",
    )

    driver_main = [f for f in ctx.files._driver if f.short_path.endswith("/oracle_gate/__main__.py")]
    if len(driver_main) != 1:
        fail("%s: the oracle-gate driver sources do not contain oracle_gate/__main__.py" % label)
    pythonpath = _rlocation(ctx, driver_main[0])[:-len("/oracle_gate/__main__.py")]

    launcher = ctx.actions.declare_file(ctx.label.name + "-test.sh")
    ctx.actions.expand_template(
        template = ctx.file._launcher_template,
        output = launcher,
        substitutions = {
            "@@LABEL@@": _shell_quote(label),
            "@@PACKAGE@@": _shell_quote(package or "."),
            "@@REPOSITORY@@": _shell_quote(_rlocation(ctx, manifest).split("/")[0]),
            "@@MANIFEST@@": _shell_quote(_rlocation(ctx, manifest)),
            "@@PYTHONPATH@@": _shell_quote(pythonpath),
        },
        is_executable = True,
    )

    own = ctx.files.srcs + [manifest] + [f for f in files.values() if f != None]
    declared_files = depset(own, transitive = [dep[OracleGateInfo].files for dep in ctx.attr.deps])
    runfiles = ctx.runfiles(
        files = [launcher] + ctx.files._driver,
        transitive_files = declared_files,
    )
    return [
        DefaultInfo(
            executable = launcher,
            files = depset([launcher, manifest]),
            runfiles = runfiles,
        ),
        OracleGateInfo(package = package, manifest = manifest, files = declared_files),
    ]

oracle_gate_test = rule(
    implementation = _oracle_gate_test_impl,
    doc = "One package's oracle-gate checks as a Bazel test. Use the `oracle_gate` macro.",
    test = True,
    attrs = {
        "matrix": attr.string(
            mandatory = True,
            doc = "JSON from the macro: the declared owners, tests, fixtures and rows, each " +
                  "path entry paired with the files it matched at loading time.",
        ),
        "srcs": attr.label_list(
            allow_files = True,
            doc = "Every file the matrix names: tests, fixtures, guarded sources, oracle modules.",
        ),
        "lock": attr.label(
            allow_single_file = True,
            doc = "The package's oracle_gate.lock; None when it does not exist yet.",
        ),
        "seeds": attr.label(allow_single_file = True, doc = "The package's seeds.jsonl, if any."),
        "freeze": attr.label(allow_single_file = True, doc = "The package's flake_freeze.yaml, if any."),
        "assumptions": attr.label(allow_single_file = True, doc = "The package's assumptions.yaml, if any."),
        "deps": attr.label_list(
            providers = [OracleGateInfo],
            doc = "The gates of the packages this one depends on.",
        ),
        "_launcher_template": attr.label(
            default = Label("//rules/private:launcher.sh.tpl"),
            allow_single_file = True,
            doc = "The bash launcher, expanded once per target.",
        ),
        "_driver": attr.label(
            default = Label("//python:driver"),
            doc = "The oracle-gate Python driver sources, run from the runfiles.",
        ),
    },
)
