"""The `oracle_gate` macro and the `oracle_gate_test` rule behind it (SPEC §8).

A gate target runs one package's checks that need only that package's tree:
the fixtures and the assertion surface of the tests match `oracle_gate.lock`,
the ledgers parse, and each matrix row's one-tree checks (seed replay,
known-bad seeds, partitions, budgeted properties) pass. The macro checks the
declared matrix (`matrix.bzl`, in the words of the Python readers) and hands
it to the rule as plain attributes; the rule writes a JSON manifest with
exactly the `invariants.yaml` schema and a bash launcher that runs the
oracle-gate driver, shipped as runfiles, with the interpreter that
`oracle_gate_python` recorded. No sh_test, py_test or external rule set is
involved, so the rule loads under WORKSPACE (Bazel 4 to 6) and bzlmod (Bazel 7+).
"""

load(":matrix.bzl", "check_matrix", "message", "path_problem", "shown")
load(":schema.bzl", "GATE_FILES")

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

_LOCK = "lock"

# ---------------------------------------------------------------------------
# Loading phase: the macro checks the matrix (it alone can glob) and passes
# the first mistake to the rule, which reports it with the target's label.
# ---------------------------------------------------------------------------

def _is_label(value):
    return value.startswith("//") or value.startswith("@") or value.startswith(":")

def _local_file(attr_name, value, package):
    """A lock or ledger argument: `(attribute value, problem or None)`.

    Labels go to the rule attribute, which checks their package at analysis
    time. A path must be the expected name at the package root; an explicitly
    named ledger must exist. A lock that does not exist yet is not an error
    here: the launcher reports it missing with the command that writes it.
    """
    expected = GATE_FILES[attr_name]
    implicit = value == None
    if implicit:
        value = expected
    if type(value) != "string":
        return None, message("file_name", attr_name, expected, package, shown(value))
    if _is_label(value):
        return value, None
    if path_problem(value) != None:
        return None, message("file_outside", attr_name, shown(value), package, expected)
    if value != expected:
        return None, message("file_name", attr_name, expected, package, shown(value))
    if native.glob([value], allow_empty = True):
        return value, None
    if implicit or attr_name == _LOCK:
        return None, None
    return None, message("file_missing", attr_name, value, package)

def _budget_attr(rows, key):
    return {row["id"]: str(row["budget"][key]) for row in rows if key in row["budget"]}

def oracle_gate(
        name,
        rows = [],
        tests = [],
        fixtures = [],
        lock = GATE_FILES["lock"],
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
    partitions, budgeted properties); it writes JUnit to `$XML_OUTPUT_FILE`.
    `bazel build //pkg:<name>` writes the matrix as `<name>.matrix.json`, in
    the invariants.yaml schema, for `oracle-gate lock --write --matrix`.

    A mistake in the declaration is an analysis error of the target, worded
    exactly as `oracle-gate check` words it for the same BUILD file.

    Args:
      name: the target name, usually `oracle_gate`.
      rows: the matrix rows, each an `invariant(...)`.
      tests: the test files whose assertion surface is locked: package-relative
        paths (for example from `glob()`) or glob patterns. Each entry must
        match at least one file.
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
    package = native.package_name()

    matrix, srcs, problem = check_matrix(owners, tests, fixtures, rows, package)
    files = {}
    given = {"lock": lock, "seeds": seeds, "freeze": freeze, "assumptions": assumptions}
    for attr_name in GATE_FILES:
        files[attr_name], file_problem = _local_file(attr_name, given[attr_name], package)
        problem = problem or file_problem
    if matrix == None:
        matrix = struct(owners = [], tests = [], test_files = [], fixtures = [], fixture_files = [], rows = [])
        srcs = []

    oracle_gate_test(
        name = name,
        problem = problem or "",
        owners = matrix.owners,
        tests = matrix.tests,
        test_files = matrix.test_files,
        fixtures = matrix.fixtures,
        fixture_files = matrix.fixture_files,
        rows = [row["id"] for row in matrix.rows],
        row_globs = {row["id"]: row["globs"] for row in matrix.rows},
        row_properties = {row["id"]: row["properties"] for row in matrix.rows if row["properties"]},
        row_partitions = {row["id"]: row["partitions"] for row in matrix.rows if row["partitions"]},
        row_relations = {row["id"]: row["relations"] for row in matrix.rows if row["relations"]},
        row_fixtures = {row["id"]: row["fixtures"] for row in matrix.rows if row["fixtures"]},
        row_fixture_files = {row["id"]: row["fixture_files"] for row in matrix.rows if row["fixture_files"]},
        row_examples = _budget_attr(matrix.rows, "examples"),
        row_seconds = _budget_attr(matrix.rows, "seconds"),
        srcs = srcs,
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
# Analysis phase: report the macro's finding, check what only labels tell,
# write the manifest and the launcher.
# ---------------------------------------------------------------------------

def _display(label):
    """`//pkg:name` for the main repository, `@repo//pkg:name` otherwise.

    str(label) differs between Bazel versions (`@//`, `@@//`), and messages
    should read the same everywhere.
    """
    if label.workspace_name:
        return "@%s//%s:%s" % (label.workspace_name, label.package, label.name)
    return "//%s:%s" % (label.package, label.name)

def _in_package(ctx, label, attr_name):
    """The File of a lock or ledger label, checked to be the package's own."""
    target = getattr(ctx.attr, attr_name)
    if target == None:
        return None
    expected = GATE_FILES[attr_name]
    package = ctx.label.package
    file = getattr(ctx.file, attr_name)
    given = shown(_display(target.label))
    if target.label.workspace_name != ctx.label.workspace_name or target.label.package != package:
        fail("%s: %s" % (label, message("file_outside", attr_name, given, package, expected)))
    if not file.is_source:
        fail("%s: %s" % (label, message("file_generated", attr_name, given, expected)))
    if target.label.name != expected:
        fail("%s: %s" % (label, message("file_name", attr_name, expected, package, given)))
    return file

def _number(text):
    return int(text) if text.lstrip("-").isdigit() else float(text)

def _manifest_rows(attr):
    """The rows of the structured attributes, in the invariants.yaml schema."""
    rows = []
    for row_id in attr.rows:
        row = {
            "id": row_id,
            "globs": attr.row_globs[row_id],
            "fixtures": attr.row_fixture_files.get(row_id, []),
        }
        row["properties"] = attr.row_properties.get(row_id, [])
        row["partitions"] = attr.row_partitions.get(row_id, [])
        row["relations"] = attr.row_relations.get(row_id, [])
        budget = {}
        if row_id in attr.row_examples:
            budget["examples"] = _number(attr.row_examples[row_id])
        if row_id in attr.row_seconds:
            budget["seconds"] = _number(attr.row_seconds[row_id])
        if budget:
            row["budget"] = budget
        rows.append(row)
    return rows

def _rlocation(ctx, file):
    """The path of `file` below the runfiles directory."""
    if file.short_path.startswith("../"):
        return file.short_path[len("../"):]
    return ctx.workspace_name + "/" + file.short_path

def _shell_quote(text):
    return "'" + text.replace("'", "'\\''") + "'"

def _oracle_gate_test_impl(ctx):
    label = _display(ctx.label)
    if ctx.attr.problem:
        fail("%s: %s" % (label, ctx.attr.problem))
    files = {attr_name: _in_package(ctx, label, attr_name) for attr_name in GATE_FILES}
    deps = []
    for dep in ctx.attr.deps:
        if dep.label.workspace_name != ctx.label.workspace_name:
            fail("%s: %s" % (label, message("dep_repository", shown(_display(dep.label)))))
        deps.append("//%s:%s" % (dep.label.package, dep.label.name))
    package = ctx.label.package

    # Exactly the invariants.yaml schema, so config.matrix.parse_matrix reads
    # it. tests and fixtures are the files the declared entries match (literal
    # paths are valid globs); row globs stay as written, because they guard
    # production paths that later patches may add.
    manifest = ctx.actions.declare_file(ctx.label.name + ".matrix.json")
    ctx.actions.write(
        output = manifest,
        content = json.encode_indent({
            "version": 1,
            "owners": ctx.attr.owners,
            "tests": ctx.attr.test_files,
            "fixtures": ctx.attr.fixture_files,
            "deps": sorted(deps),
            "rows": _manifest_rows(ctx.attr),
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
            "@@INTERPRETER@@": _shell_quote(_rlocation(ctx, ctx.file._interpreter)),
        },
        is_executable = True,
    )

    own = ctx.files.srcs + [manifest] + [f for f in files.values() if f != None]
    declared_files = depset(own, transitive = [dep[OracleGateInfo].files for dep in ctx.attr.deps])
    runfiles = ctx.runfiles(
        files = [launcher] + ctx.files._driver + ctx.files._python,
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
    doc = "One package's oracle-gate checks as a Bazel test. Use the `oracle_gate` macro, " +
          "which checks the matrix and fills these attributes.",
    test = True,
    attrs = {
        "problem": attr.string(
            doc = "The first mistake the macro found in the declaration, reported at analysis time.",
        ),
        "owners": attr.string_list(doc = "The owners whose review an oracle change needs."),
        "tests": attr.string_list(doc = "The `tests` entries as written (paths or patterns)."),
        "test_files": attr.string_list(doc = "The package files `tests` matched."),
        "fixtures": attr.string_list(doc = "The `fixtures` entries as written."),
        "fixture_files": attr.string_list(doc = "The package files `fixtures` matched."),
        "rows": attr.string_list(doc = "The row ids, in order; the `row_*` attributes are keyed by them."),
        "row_globs": attr.string_list_dict(doc = "Row id -> the production paths it guards, as written."),
        "row_properties": attr.string_list_dict(doc = "Row id -> its `file.py:NAME` properties."),
        "row_partitions": attr.string_list_dict(doc = "Row id -> its `file.py:NAME` partition tables."),
        "row_relations": attr.string_list_dict(doc = "Row id -> its `file.py:NAME` relation tables."),
        "row_fixtures": attr.string_list_dict(doc = "Row id -> its `fixtures` entries as written."),
        "row_fixture_files": attr.string_list_dict(doc = "Row id -> the package files its `fixtures` matched."),
        "row_examples": attr.string_dict(doc = "Row id -> its budget's `examples`, when given."),
        "row_seconds": attr.string_dict(doc = "Row id -> its budget's `seconds`, when given."),
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
        "_python": attr.label(
            default = Label("@oracle_gate_python//:python"),
            doc = "The interpreter record and the .pth files and dist-info directories it " +
                  "names (rules/python.bzl): inputs of every gate, so its cache key moves " +
                  "with the interpreter and its packages.",
        ),
        "_interpreter": attr.label(
            default = Label("@oracle_gate_python//:interpreter.txt"),
            allow_single_file = True,
            doc = "The recorded interpreter's path, which the launcher runs.",
        ),
    },
)
