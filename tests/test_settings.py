"""Root settings: [tool.oracle-gate] in pyproject.toml or oracle-gate.toml, read from a commit."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.config.settings import DEFAULT_DOCS, Settings, read_settings
from oracle_gate.errors import ConfigError
from oracle_gate.repo.trees import GitTree


def _settings(repo: GitRepo, files: dict[str, str]) -> Settings:
    for path, text in files.items():
        repo.write(path, text)
    return read_settings(GitTree(repo.path, repo.commit("settings")))


def test_no_settings_file_gives_the_documented_defaults(repo: GitRepo) -> None:
    settings = _settings(repo, {"README.md": "x\n"})
    assert settings == Settings(notes="review", docs=DEFAULT_DOCS, outside=(), path=None)


def test_pyproject_table_is_read(repo: GitRepo) -> None:
    text = (
        '[project]\nname = "x"\n\n[tool.oracle-gate]\nnotes = "signed"\noutside = ["scripts/**"]\n'
    )
    settings = _settings(repo, {"pyproject.toml": text})
    assert (settings.notes, settings.outside, settings.path) == (
        "signed",
        ("scripts/**",),
        "pyproject.toml",
    )


def test_own_file_is_read_and_docs_globs_replace_the_defaults(repo: GitRepo) -> None:
    settings = _settings(repo, {"oracle-gate.toml": 'docs = ["manual/**"]\n'})
    assert (settings.docs, settings.path) == (("manual/**",), "oracle-gate.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('notes = "sometimes"\n', "oracle-gate.toml:1: 'notes' must be one of review, signed"),
        ('\n\nnote = "signed"\n', "oracle-gate.toml:3: unknown key 'note'"),
        ('outside = "scripts/**"\n', "oracle-gate.toml:1: 'outside' must be a list of glob"),
        ('docs = ["a/***"]\n', "oracle-gate.toml:1: 'docs' pattern 'a/***'"),
        ("notes = \n", "oracle-gate.toml:1: is not valid TOML"),
        ('\ntimeout-floor = "5"\n', "oracle-gate.toml:2: 'timeout-floor' must be a number"),
        ("timeout-floor = 0\n", "oracle-gate.toml:1: 'timeout-floor' must be a number"),
        ("timeout-floor = true\n", "oracle-gate.toml:1: 'timeout-floor' must be a number"),
    ],
)
def test_bad_settings_are_a_config_error_naming_file_and_line(
    repo: GitRepo, text: str, message: str
) -> None:
    with pytest.raises(ConfigError) as error:
        _settings(repo, {"oracle-gate.toml": text})
    assert str(error.value).startswith(message)


def test_timeout_floor_is_read_as_seconds(repo: GitRepo) -> None:
    assert _settings(repo, {"oracle-gate.toml": "timeout-floor = 0.5\n"}).timeout_floor == 0.5
    assert Settings().timeout_floor == 5.0


def test_settings_in_two_places_are_an_error(repo: GitRepo) -> None:
    with pytest.raises(ConfigError, match="keep one"):
        _settings(
            repo,
            {"oracle-gate.toml": "", "pyproject.toml": '[tool.oracle-gate]\nnotes = "review"\n'},
        )
