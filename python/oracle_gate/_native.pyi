"""Type stub and documentation of the native core, ``oracle_gate._native``.

``oracle_gate._fallback`` implements the same functions in pure Python; the two
must return identical values and raise the same exceptions.
"""

from collections.abc import Sequence
from typing import TypeAlias

__all__ = [
    "NativeGates",
    "__version__",
    "extract_units",
    "extract_units_many",
    "hash_files",
    "hash_files_cached",
    "walk_tree",
]

__version__: str

def hash_files(paths: Sequence[str]) -> list[str]:
    """BLAKE3 digests of files, computed in parallel with the GIL released.

    Arguments:
        paths: file paths (absolute, or relative to the current directory).

    Returns:
        One lowercase hex digest (64 characters) per path, in input order.

    Raises:
        oracle_gate.errors.TreeError: a path is missing, a broken symlink, a
            directory, a FIFO, socket or device ("not a regular file (a FIFO,
            socket or device)"; opened without blocking, so a FIFO nobody
            writes to cannot hang the run), or unreadable. When several paths
            fail, the error names the smallest failing path, so the error is
            deterministic.
    """

def walk_tree(root: str) -> list[str]:
    """Every file under ``root``, found by a parallel walk with the GIL released.

    Directories named ``.git``, ``.oracle_gate`` and ``__pycache__`` (or
    symlinks to directories with those names) are skipped with everything
    below them. Everything else that is not a directory is listed: regular
    files, special files, and symlinks of every kind (to a file, to a
    directory, broken, looping), which are never followed.

    Arguments:
        root: the directory to walk.

    Returns:
        Repo-relative POSIX paths, sorted by code point (``sorted()`` order).

    Raises:
        oracle_gate.errors.TreeError: ``root`` does not exist ("tree root does
            not exist") or is not a directory ("tree root is not a directory");
            a directory cannot be listed ("permission denied", "vanished while
            the tree was walked", "cannot read directory (errno N)"); a name is
            not UTF-8 ("file name is not valid UTF-8", the path shown with
            U+FFFD replacements, nothing below it listed). Paths are relative to
            ``root`` (``root`` itself as given); when several fail, the smallest
            path is named, so the error is deterministic.
    """

def parse_tree_listing(listing: bytes) -> tuple[dict[str, str], set[str]]:
    """The files of a commit, from ``git ls-tree -r -z --full-tree`` output.

    Arguments:
        listing: git's output: records ``<mode> <type> <object id>\\t<path>``,
            each ended by a NUL byte.

    Returns:
        ``({path: object id}, {paths of symbolic links})`` for the ``blob``
        records (a ``tree`` or a submodule's ``commit`` is no file), the ids in
        listing order; a link has mode ``120000``. A path that is not UTF-8 is
        decoded with ``surrogateescape``, as git's bytes are everywhere else.
    """

def split_cat_file_batch(output: bytes, count: int) -> list[bytes | None]:
    """The objects ``git cat-file --batch=%(objectsize)`` printed, in order.

    Arguments:
        output: git's output: per object, its size in decimal and a newline, its
            content and a newline; or ``<id> missing`` and a newline.
        count: how many objects were asked for.

    Returns:
        ``count`` contents, None for each missing object.

    Raises:
        ValueError: the output holds fewer than ``count`` objects.
    """

def hash_files_cached(root: str, paths: Sequence[str], cache: str | None = None) -> list[str]:
    """BLAKE3 digests of files under ``root``, reusing a stat cache for unchanged files.

    Files are stat'ed and hashed in parallel with the GIL released. A digest
    comes from the cache only if the file's size, mtime_ns, ctime_ns, device
    and inode all equal the cached ones (symlinks followed, as hashing does)
    and, git's racy-clean rule, the cached mtime and ctime are both older than
    the cache's write time; everything else is read and hashed.

    The cache file is written atomically (a private temporary file renamed
    over it), so concurrent runs leave the last writer's whole file. Any cache
    that is missing, torn, fails its checksum, is for another ``root`` or does
    not parse is ignored, never trusted. Failing to read or write the cache is
    never an error. Entries for paths not in this call are kept while they are
    still regular files, so a deleted file leaves the cache at its next write.
    Each writer's temporary file is ``.{name}.{pid}.{unique}.tmp`` next to the
    cache; a writer removes those whose process is gone or that are over a day
    old, left by writers killed before their rename. Both backends read and
    write the same format::

        body = "oracle-gate stat cache 1" NUL written_ns NUL root NUL
               { digest SP size SP mtime_ns SP ctime_ns SP dev SP ino SP path NUL }
        file = body "#" blake3_hex(body) LF

    with entries sorted by path; ``written_ns`` is the mtime of the writer's
    temporary file, created before any file is looked at, so it comes from
    the filesystem's own clock. Only entries older than it are written.

    Arguments:
        root: the directory ``paths`` are relative to.
        paths: file paths relative to ``root``.
        cache: the cache file (its directory is created), or None for no cache.

    Returns:
        One lowercase hex digest (64 characters) per path, in input order;
        identical to ``hash_files`` on the joined paths.

    Raises:
        oracle_gate.errors.TreeError: as ``hash_files``, naming the path as
            given in ``paths`` (relative), the smallest failing one first.
    """

def extract_units(source: bytes, path: str) -> list[tuple[str, str]]:
    """The assertion surface of one Python test file (``docs/surface.md``).

    Parsed with ruff's parser (accepting only the syntax of the running
    Python version) and extracted with the GIL released; the result is byte for
    byte what ``oracle_gate.surface.extract_units`` returns.

    Arguments:
        source: the file's bytes (UTF-8, optionally with a BOM).
        path: the file's path, used only in error messages.

    Returns:
        ``(key, canonical_text)`` pairs sorted by key; a key is the qualified
        name inside the file (``test_a``, ``TestA::test_b``).

    Raises:
        oracle_gate.errors.SurfaceError: ``(message, path, line)`` with a
            1-based line: "is not valid UTF-8" (line of the first invalid
            byte), "does not parse as Python: ..." (the reason's wording comes
            from the parser and differs from CPython's), or "nests more than
            100 levels deep". A bug inside the extractor is reported as
            "internal error: ..." with no line, never as a panic.
    """

def extract_units_many(items: Sequence[tuple[bytes, str]]) -> list[list[tuple[str, str]]]:
    """``extract_units`` over many files, in parallel with the GIL released.

    Arguments:
        items: ``(source, path)`` pairs.

    Returns:
        One list of ``(key, canonical_text)`` pairs per item, in input order.

    Raises:
        oracle_gate.errors.SurfaceError: as ``extract_units``; when several
            files fail, the error names the smallest failing path, so the
            error is deterministic.
    """

class NativeGates:
    """A BUILD file's gate calls, made Python values only on ``read()``."""

    def read(self) -> tuple[list[tuple[object, ...]], list[str]]:
        """``(calls, invariant names)``; ``bazel/read/native.py`` says the encoding."""

    def __len__(self) -> int:
        """The number of top-level gate calls."""

# Every edge as {target: {source: why}}, the computed labels' (BUILD index, package
# prefix, why, repository root), where edges over-approximate (BUILD path, why), and per BUILD file:
# .bzl files reached, error, lines holding only rule calls, its gate calls or None,
# its package's files when it calls a gate, its gate's matrix or None.
NativeEvaluation: TypeAlias = tuple[
    dict[str, dict[str, str]],
    list[tuple[int, str, str, str]],
    list[tuple[str, str]],
    list[
        tuple[
            tuple[str, ...],
            str,
            tuple[tuple[int, int], ...],
            NativeGates | None,
            tuple[str, ...] | None,
            object | None,
        ]
    ],
]

def evaluate_build_files(
    builds: list[tuple[str, str, str, bytes]],
    bzl: list[tuple[str, bytes]],
    own_names: list[tuple[str, list[str]]],
    files: list[str] | None = None,
    interpret_all: bool = False,
    named: list[tuple[str, str]] = ...,
    unknown: str = "",
    links: list[str] = ...,
    ignored: list[str] = ...,
) -> NativeEvaluation:
    """BUILD files evaluated as Starlark with the repository's own .bzl files, in parallel
    with the GIL released. No pure-Python twin: the fallback reads BUILD files statically.

    Arguments:
        builds: ``(BUILD path, package, workspace root, bytes)``; paths are
            repository-relative, the package relative to its workspace root.
        bzl: every ``.bzl`` file of the tree, ``(repository-relative path, bytes)``.
        own_names: ``(workspace root, names)``: the names a repository calls
            itself (``workspace(name = ...)``), so ``@name//`` loads resolve to it.
        files: every file of the tree, repository-relative, sorted; what a
            gate's ``glob()`` and ledger names are checked against. None: no
            matrix is built. (A name that is not UTF-8 cannot be passed;
            ``graph/scan.py`` leaves a gate with such a file to ``gate_matrix``.)
        named: ``(name, root)``: the names the main repository gives the tree's
            other repositories (``local_repository(name, path)``), and its own
            names, so ``@name//`` labels and loads resolve into them.
        unknown: why a repository name not in ``named`` may lie in the tree ("" if
            it cannot): a label of one is then an edge to every package.
        links: the files committed as symbolic links: a ``glob()`` whose pattern
            matches one or could enter it is opaque, as is one that finds a name
            that is not ASCII (Bazel 4.2.3 measures it in Latin-1 bytes).
        ignored: the directories ``.bazelignore`` names, each ending in ``/``, which
            ``glob()`` does not enter (a gate's matrix still lists their files).
        interpret_all: run every file in the interpreter. By default a plain
            file (loads from repositories not in ``bzl`` only, rule calls with
            literal arguments) is read from its syntax tree, with the same
            outcome; ``tests/test_plain_builds.py`` compares the two.

    Returns:
        ``(dependents, computed, approximate, outcomes)``. The evaluation records
        every string starting with ``//`` or ``@`` a rule call was given (not in
        ``name``, ``visibility``, ``tags``, ``licenses``; of ``package()`` and
        ``package_group()`` only the label defaults and ``includes``), including a
        ``rule()``'s ``attr.label*`` defaults, made absolute; every such string
        at all when the callee is a symbol loaded from a repository not in
        ``bzl``. Each one ``label_ref`` reads as a label of a repository in the
        tree (the file's own, or one ``named`` names) is an edge: in
        ``dependents`` as ``{target: {source: why}}``, the repository-relative
        package directory the label names and the file's package directory
        (never the target itself), the first declaration of an edge kept, in
        input order; or, for a computed label's literal part, in ``computed``
        as ``(index of the BUILD file in builds, package prefix, why, root of
        the repository it names)``.
        ``why`` is the ``file:line`` of the call and the label, as ``select
        --explain`` shows it. ``approximate`` holds ``(BUILD path, why)`` where
        those edges over-approximate (an opaque symbol's call, a computed
        label). ``outcomes`` has, per BUILD file in input order, ``(loads,
        error, rule_lines, gates, owned, matrix)``: ``loads`` are the ``.bzl`` paths
        reached, transitively, sorted; ``error`` is "" or the first line of why
        the file could not be evaluated (syntax, a runtime error, a load cycle,
        not UTF-8), and then it has no edges.
        ``rule_lines``, for a file that calls a gate or whose gate calls were
        not read (else empty), are 1-based inclusive line ranges holding only
        top-level calls of functions other than ``oracle_gate`` (or a name a
        ``load()`` binds to it), sharing no line with another statement. ``gates`` is
        ``(calls, invariant names)`` when every top-level ``oracle_gate(...)``
        call is written plainly enough to read without the static reader, else
        None, held as a ``NativeGates``: ``len()`` counts the calls and ``read()``
        makes them Python values (``bazel/read/native.py``'s ``gates_from_native``
        says the encoding), for the few files that need them.
        ``owned`` are the package's files when the file calls a gate and
        ``files`` is given (package-relative, sorted, the files of subpackages
        left out: what ``glob()`` sees), else None.
        ``matrix`` is the matrix of the file's one gate when ``files`` is given
        and ``config/matrix.py``'s ``gate_matrix`` would surely accept the gate
        (``native_gate_matrix`` says the encoding); None for every other gate,
        every mistake included, which ``gate_matrix`` then checks and words.
    """

def label_ref(text: str) -> tuple[str, str, bool] | None:
    """``(repository, package, computed)`` of what an absolute label can name, or None:
    ``bazel.labels.label_ref``, whose answers the native core's edges are resolved with
    (``tests/unit/bazel/test_labels.py`` holds the two equal)."""
