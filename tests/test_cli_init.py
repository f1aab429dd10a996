"""``oracle-gate init``: a matrix from the package's layout, stubs that fail, never an overwrite."""

from __future__ import annotations

import re

import pytest

from gitrepo import GitRepo, run
from oracle_gate.config.matrix import parse_matrix
from oracle_gate.config.settings import Settings, read_settings
from oracle_gate.model import Verdict
from oracle_gate.repo.trees import GitTree

PKG = "libs/geo"
WRITTEN = (
    "invariants.yaml",
    "props.py",
    "seeds.jsonl",
    "flake_freeze.yaml",
    "assumptions.yaml",
    "ORACLE_CHANGELOG.md",
)


def _geo(repo: GitRepo) -> None:
    repo.write(
        f"{PKG}/geo/__init__.py",
        '__all__ = ["area", "perimeter"]\n\n\ndef area(w, h):\n    return w * h\n\n\n'
        "def perimeter(w, h):\n    return 2 * (w + h)\n\n\ndef helper():\n    return 0\n\n\n"
        "def _private():\n    return 1\n",
    )
    repo.write(
        f"{PKG}/geo/ops.py", "def scale(p, k):\n    return p * k\n\n\nclass Shape:\n    pass\n"
    )
    repo.write(f"{PKG}/cli.py", "def main():\n    return 0\n")
    repo.write(f"{PKG}/tests/test_area.py", "from geo import area\n\n\ndef test_area():\n"
               "    assert area(2, 3) == 6\n")  # fmt: skip
    repo.write(f"{PKG}/tests/unit/shape_test.py", "def test_nothing():\n    assert True\n")
    repo.write(f"{PKG}/tests/testdata/cases.json", "[]\n")
    repo.write(f"{PKG}/README.md", "geo\n")


def _init(repo: GitRepo, *args: str) -> tuple[int, str, str]:
    done = run("init", *args, "--repo", str(repo.path))
    return done.returncode, done.stdout, done.stderr


def test_init_derives_rows_tests_and_fixtures_from_the_layout(repo: GitRepo) -> None:
    _geo(repo)
    code, out, err = _init(repo, PKG, "--owner", "@geo-team")
    assert code == 0, err
    assert "2 row(s), 4 property stub(s)" in out
    matrix = parse_matrix((repo.path / PKG / "invariants.yaml").read_bytes(), "m")
    assert matrix.owners == ("@geo-team",)
    assert matrix.tests == ("tests/**/*_test.py", "tests/**/test_*.py")
    assert matrix.fixtures == ("tests/testdata/**",)
    rows = {row.id: row for row in matrix.rows}
    assert set(rows) == {"cli", "geo"}
    assert rows["geo"].globs == ("geo/**",)
    assert rows["cli"].globs == ("cli.py",)
    # Public functions only, limited by __all__; classes and _private are not properties.
    assert rows["geo"].properties == (
        "props.py:prop_area",
        "props.py:prop_perimeter",
        "props.py:prop_scale",
    )
    assert rows["cli"].properties == ("props.py:prop_main",)
    assert rows["geo"].fixtures == ("tests/testdata/",)
    for name in WRITTEN:
        assert (repo.path / PKG / name).is_file(), name
    props = repo.read(f"{PKG}/props.py")
    assert (
        "from cli import main\nfrom geo import area, perimeter\nfrom geo.ops import scale\n"
        in props
    )
    assert "helper" not in props


def test_every_stub_fails_until_it_is_written(repo: GitRepo) -> None:
    _geo(repo)
    assert _init(repo, PKG)[0] == 0
    source = repo.read(f"{PKG}/props.py")
    # Run the stubs with stand-ins for the package's functions.
    source = re.sub(r"^from (geo|geo\.ops|cli) import .*$", "", source, flags=re.MULTILINE)
    namespace: dict[str, object] = {
        name: _stand_in for name in ("area", "perimeter", "scale", "main")
    }
    exec(compile(source, "props.py", "exec"), namespace)
    stubs = sorted(name for name in namespace if name.startswith("prop_"))
    assert stubs == ["prop_area", "prop_main", "prop_perimeter", "prop_scale"]
    for name in stubs:
        prop = namespace[name]
        assert callable(prop) and getattr(prop, "strategy", None) is not None
        with pytest.raises(NotImplementedError, match=f"{name} is a stub"):
            prop(None)


def _stand_in() -> None: ...


def test_an_unwritten_stub_rejects_a_patch_and_a_written_property_passes(repo: GitRepo) -> None:
    _geo(repo)
    repo.remove(f"{PKG}/cli.py")
    assert _init(repo, PKG)[0] == 0
    assert run("lock", "--write", PKG, "--repo", str(repo.path)).returncode == 0
    base = repo.commit("gate the geo package")
    repo.replace(f"{PKG}/geo/__init__.py", "return w * h", "return h * w")
    head = repo.commit("agent: refactor area")
    report = repo.gate(base, head, replay=False)
    assert report.verdict is Verdict.REJECT
    assert report.verdict_of(f"{PKG}/props.py") is Verdict.REJECT
    assert "prop_area is a stub" in " ".join(f.reason for f in report.findings)
    # The honest neighbour: a human writes the properties, relocks, and commits.
    repo.git("checkout", "-q", base)
    props = repo.read(f"{PKG}/props.py")
    for name in ("area", "perimeter", "scale"):
        stub = re.search(rf"def prop_{name}\(sample\):\n(.*\n){{2}}", props)
        assert stub is not None
        body = f"def prop_{name}(sample):\n    w, h = sample\n"
        body += f"    assert {name}(w, h) == {name}(w, h)\n"
        props = props.replace(stub.group(0), body)
    props = props.replace("st.none()", "st.tuples(st.integers(), st.integers())")
    repo.write(f"{PKG}/props.py", props)
    repo.git("switch", "-q", "-c", "written")
    base = repo.commit("write the properties")
    repo.replace(f"{PKG}/geo/__init__.py", "return w * h", "return h * w")
    assert repo.gate(base, repo.commit("agent: refactor area")).verdict is Verdict.PASS


def test_init_never_overwrites_and_writes_nothing_when_refused(repo: GitRepo) -> None:
    _geo(repo)
    repo.write(f"{PKG}/seeds.jsonl", '{"row": "geo", "prop": "p", "input": 1, "expect": "hold"}\n')
    code, _out, err = _init(repo, PKG)
    assert code == 2
    assert f"init never overwrites: {PKG}/seeds.jsonl exists" in err
    assert not (repo.path / PKG / "invariants.yaml").exists()
    assert not (repo.path / PKG / "props.py").exists()


def test_init_of_a_module_that_does_not_parse_names_file_and_line(repo: GitRepo) -> None:
    _geo(repo)
    repo.write(f"{PKG}/geo/broken.py", "def ok():\n    pass\n\ndef (:\n")
    code, _out, err = _init(repo, PKG)
    assert code == 2
    assert f"{PKG}/geo/broken.py:4: does not parse as Python" in err
    assert not (repo.path / PKG / "invariants.yaml").exists()


def test_init_root_writes_settings_that_are_the_defaults_when_uncommented(repo: GitRepo) -> None:
    _geo(repo)
    assert _init(repo, PKG, "--owner", "@geo-team")[0] == 0
    code, out, err = _init(repo, "--root")
    assert code == 0, err
    assert out == "wrote oracle-gate.toml, CODEOWNERS\n"
    assert "/libs/geo/ @geo-team" in repo.read("CODEOWNERS").splitlines()
    text = repo.read("oracle-gate.toml")
    uncommented = re.sub(r"^# ([\w-]+ = |  \"|\]$)", r"\1", text, flags=re.MULTILINE)
    uncommented = uncommented.replace("\n#   ", "\n  ")
    assert uncommented.count("\n#") < text.count("\n#")
    repo.write("oracle-gate.toml", uncommented)
    commit = repo.commit("settings")
    settings = read_settings(GitTree(repo.path, commit))
    # replay-seconds is unset by default (derived from the parent's baseline): its line
    # shows an example value
    assert settings == Settings(path="oracle-gate.toml", replay_seconds=600.0)
    keys = ("notes", "docs", "outside", "timeout-floor", "replay-seconds", "memory-limit")
    keys += ("cpu-limit", "process-limit", "open-files-limit", "file-size-limit", "tmpfs-size")
    for key in keys:
        assert f"\n{key} = " in uncommented, key
    # Never twice.
    code, _out, err = _init(repo, "--root")
    assert code == 2 and "init never overwrites: oracle-gate.toml exists" in err


def test_init_root_keeps_an_existing_codeowners_and_refuses_next_to_pyproject_settings(
    repo: GitRepo,
) -> None:
    repo.write(".github/CODEOWNERS", "* @everyone\n")
    code, out, _err = _init(repo, "--root")
    assert code == 0
    assert "kept .github/CODEOWNERS" in out
    assert not (repo.path / "CODEOWNERS").exists()
    repo.remove("oracle-gate.toml")
    repo.write("pyproject.toml", '[tool.oracle-gate]\nnotes = "signed"\n')
    code, _out, err = _init(repo, "--root")
    assert code == 2 and "already has [tool.oracle-gate]" in err
    assert not (repo.path / "oracle-gate.toml").exists()


@pytest.mark.parametrize("args", [(), ("libs/nowhere",)])
def test_init_without_a_package_directory_is_an_error(repo: GitRepo, args: tuple[str, ...]) -> None:
    code, _out, err = _init(repo, *args)
    assert code == 2
    assert "init needs PKG" in err or "libs/nowhere: package directory does not exist" in err


def test_an_agent_that_makes_a_stub_decorative_is_rejected(repo: GitRepo) -> None:
    _geo(repo)
    repo.remove(f"{PKG}/cli.py")
    assert _init(repo, PKG)[0] == 0
    assert run("lock", "--write", PKG, "--repo", str(repo.path)).returncode == 0
    base = repo.commit("gate the geo package")
    props = repo.read(f"{PKG}/props.py")
    quiet = re.sub(r"    raise NotImplementedError\(.*\n", "    return None\n", props)
    assert quiet != props
    repo.write(f"{PKG}/props.py", quiet)
    repo.replace(f"{PKG}/geo/__init__.py", "return w * h", "return h * w")
    report = repo.judge_paths(base, repo.commit("agent: refactor area, quiet the stubs"))
    assert report.verdict_of(f"{PKG}/props.py") is Verdict.REJECT


def _single_package(repo: GitRepo, code: str) -> None:
    """A single-package library at the repository root: code in ``code`` ("src/shapes" or
    "shapes"), tests/ at the root, a Sphinx conf.py, a release script and packaging."""
    repo.write(
        f"{code}/__init__.py",
        '"""Shapes."""\n\nfrom ._impl import area, corners\n\n__all__ = ["area", "corners"]\n',
    )
    repo.write(
        f"{code}/_impl.py",
        "def area(w, h):\n    return w * h\n\n\ndef corners(w, h):\n"
        "    yield from [(0, 0), (w, 0), (w, h), (0, h)]\n\n\ndef internal():\n    return 0\n",
    )
    repo.write("tests/test_area.py", "from shapes import area\n\n\ndef test_area():\n"
               "    assert area(2, 3) == 6\n")  # fmt: skip
    repo.write("docs/conf.py", 'project = "shapes"\n')
    repo.write("docs/index.rst", "Shapes\n======\n")
    repo.write("scripts/release.py", "def main():\n    return 0\n")
    repo.write("pyproject.toml", '[project]\nname = "shapes"\nversion = "1.0"\n')
    repo.write("MANIFEST.in", "include README.md\n")
    repo.commit("a single-package library")


def _write_property(repo: GitRepo) -> None:
    props = repo.read("props.py")
    stub = re.search(r"def prop_area\(sample\):\n(.*\n){2}", props)
    assert stub is not None
    body = "def prop_area(sample):\n    w, h = sample\n    assert area(w, h) == area(h, w)\n"
    props = props.replace(stub.group(0), body).replace(
        "st.none()", "st.tuples(st.integers(), st.integers())"
    )
    corners = re.search(
        r"\n\ndef prop_corners\(sample\):\n(.*\n)+?prop_corners.strategy = .*\n", props
    )
    assert corners is not None
    repo.write("props.py", props.replace(corners.group(0), "\n"))
    repo.replace("invariants.yaml", '      - "props.py:prop_corners"\n', "")


@pytest.mark.parametrize("code", ["src/shapes", "shapes"])
def test_init_root_package_of_a_single_package_library_locks_and_checks(
    repo: GitRepo, code: str
) -> None:
    _single_package(repo, code)
    code_, out, err = _init(repo, ".", "--root", "--owner", "@shapes")
    assert code_ == 0, err
    assert "1 row(s), 2 property stub(s)" in out
    matrix = parse_matrix((repo.path / "invariants.yaml").read_bytes(), "m")
    assert [(row.id, row.globs) for row in matrix.rows] == [("shapes", (f"{code}/**",))]
    assert matrix.tests == ("tests/**/test_*.py",)
    props = repo.read("props.py")
    assert "from shapes import area, corners\n" in props  # the public API, not shapes._impl
    assert "internal" not in props
    assert "corners returns an iterator, which cannot cross" in props
    settings = read_settings(GitTree(repo.path, repo.commit("init")))
    assert settings.tooling == ("docs/**", "scripts/**")
    _write_property(repo)
    assert run("lock", "--write", ".", "--repo", str(repo.path)).returncode == 0
    base = repo.commit("gate the library")
    repo.replace(f"{code}/_impl.py", "return w * h", "return h * w")
    repo.replace("docs/conf.py", '"shapes"', '"shapes library"')
    repo.replace("scripts/release.py", "return 0", "return 1")
    repo.replace("pyproject.toml", 'version = "1.0"', 'version = "1.1"')
    repo.append("MANIFEST.in", "include LICENSE\n")
    report = repo.gate(base, repo.commit("agent: refactor, docs, release script, version bump"))
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]
    assert {p.path: p.lane.value for p in report.paths if p.lane.value == "other"} == {
        "docs/conf.py": "other",
        "scripts/release.py": "other",
        "pyproject.toml": "other",
        "MANIFEST.in": "other",
    }
    base = repo.git("rev-parse", "HEAD").strip()
    repo.replace(f"{code}/_impl.py", "return h * w", "return h * w + w")
    report = repo.gate(base, repo.commit("agent: break area"))
    assert report.verdict is Verdict.REJECT
    assert report.verdict_of("props.py") is Verdict.REJECT


def test_init_row_without_public_functions_gets_a_module_stub_and_clashes_are_aliased(
    repo: GitRepo,
) -> None:
    repo.write("plain/__init__.py", "VALUE = 1\n")
    repo.write("geo/__init__.py", "")
    repo.write("geo/a.py", "def merge(x):\n    return x\n")
    repo.write("geo/b.py", "def merge(x):\n    return x\n")
    repo.write("tests/test_x.py", "def test_x():\n    assert True\n")
    code, out, err = _init(repo, ".")
    assert code == 0, err
    assert "2 row(s), 3 property stub(s)" in out
    props = repo.read("props.py")
    assert "import plain\n" in props and "def prop_plain(sample):" in props
    assert "from geo.a import merge as geo_a_merge\n" in props
    assert "from geo.b import merge as geo_b_merge\n" in props
    matrix = parse_matrix((repo.path / "invariants.yaml").read_bytes(), "m")
    assert {row.id: row.properties for row in matrix.rows} == {
        "geo": ("props.py:prop_geo_a_merge", "props.py:prop_geo_b_merge"),
        "plain": ("props.py:prop_plain",),
    }
    namespace: dict[str, object] = {}
    source = re.sub(r"^(import plain|from geo\.\w+ import .*)$", "", props, flags=re.MULTILINE)
    exec(compile(source, "props.py", "exec"), namespace)  # the stubs fail until written
    with pytest.raises(NameError):  # plain is not imported here: the stub names it
        namespace["prop_plain"](None)  # type: ignore[operator]


def test_init_package_without_root_names_the_scripts_no_row_guards(repo: GitRepo) -> None:
    _single_package(repo, "shapes")
    code, out, _err = _init(repo, ".")
    assert code == 0
    assert "no row guards docs/**, scripts/**: production until one does" in out
    assert not (repo.path / "oracle-gate.toml").exists()
