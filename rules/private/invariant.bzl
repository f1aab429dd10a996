"""The `invariant()` helper: one row of a package's invariant matrix (SPEC §3.1)."""

load(":matrix.bzl", "INVARIANT_KIND")

def invariant(
        id = None,
        globs = [],
        properties = [],
        partitions = [],
        relations = [],
        fixtures = [],
        budget = None):
    """One invariant row of an `oracle_gate` matrix.

    Nothing is checked here: the `oracle_gate` macro checks every row, and the
    `oracle_gate_test` rule reports the first mistake at analysis time with
    the gate target's label, in the same words as `oracle-gate check`.

    Args:
      id: the row id, unique within the package: letters, digits, `_`, `.`
        and `-`. Required.
      globs: the production paths this row guards. Each entry is a
        package-relative glob pattern (Bazel `glob()` semantics; a trailing
        `/` means everything below that directory) or a literal path, for
        example from `glob()`. Each entry must match at least one file.
      properties: property functions, each as `file.py:NAME`.
      partitions: partition tables, each as `file.py:NAME`.
      relations: metamorphic relation tables, each as `file.py:NAME`.
      fixtures: the fixture files this row reads: patterns or paths, as for
        `globs`.
      budget: the property loop's budget, `{"examples": N, "seconds": S}`;
        either key may be left out.

    Returns:
      A struct that the `oracle_gate` macro turns into one row of the matrix.
    """
    return struct(
        kind = INVARIANT_KIND,
        id = id,
        globs = globs,
        properties = properties,
        partitions = partitions,
        relations = relations,
        fixtures = fixtures,
        budget = budget,
    )
