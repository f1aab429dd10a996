"""The parent's notes policy 'signed' (real SSH signatures) and 'approvals' (check --approvals).

Keys are made with ssh-keygen during the test; commits are signed by git
itself (gpg.format=ssh). Every forgery an agent could try is a case that must
be rejected, next to the honest note that must pass.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from blake3 import blake3

from gitrepo import TODAY, GitRepo, run
from oracle_gate.errors import ConfigError
from oracle_gate.model import Verdict

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")

PKG = "libs/intervals"
FIXTURE = f"{PKG}/testdata/ranges/unsorted.json"
NEW_CASE = f"{PKG}/testdata/ranges/adjacent.json"
CASE_TEXT = '{"input": [[0, 1], [1, 2], [5, 6]], "expected": [[0, 1], [1, 2], [5, 6]]}\n'
LOCK = f"{PKG}/oracle_gate.lock"
CHANGELOG = f"{PKG}/ORACLE_CHANGELOG.md"
SIGNERS = ".oracle-gate/allowed_signers"
FORMATS_DOC = (Path(__file__).resolve().parent.parent / "docs" / "formats.md").read_text()
OWNERS_MESSAGE = (
    "note not signed by an owner of libs/intervals (@intervals-team, alice@example.com)"
)

# A root harness file: a workflow whose job runs the gate (a workflow that does not is other).
GATE_WORKFLOW = "on: push\njobs:\n  gate:\n    steps:\n      - run: oracle-gate check\n"


def _key(directory: Path, name: str) -> Path:
    key = directory / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)],
        check=True,
        timeout=60,
    )
    return key


def _public(key: Path) -> str:
    return key.with_suffix(".pub").read_text().strip()


class Keys:
    def __init__(self, directory: Path) -> None:
        directory.mkdir()
        self.alice = _key(directory, "alice")  # owns libs/intervals
        self.bob = _key(directory, "bob")  # an allowed signer, owns nothing here
        self.carol = _key(directory, "carol")  # owns the root, by @handle
        self.mallory = _key(directory, "mallory")  # the agent's own key


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return Keys(tmp_path / "keys")


def _policy_repo(repo: GitRepo, keys: Keys, policy: str) -> str:
    """The example monorepo whose parent says: notes = POLICY, these signers, these owners."""
    repo.commit_example()
    repo.write("oracle-gate.toml", f'notes = "{policy}"\n')
    repo.write(
        SIGNERS,
        f"alice@example.com {_public(keys.alice)}\n"
        f"bob@example.com {_public(keys.bob)}\n"
        f'@carol namespaces="git" {_public(keys.carol)}\n',
    )
    codeowners = repo.read("CODEOWNERS").replace(
        "/libs/intervals/    @intervals-team",
        "/libs/intervals/    @intervals-team alice@example.com",
    )
    repo.write("CODEOWNERS", "* @carol\n" + codeowners)
    return repo.commit("policy")


@pytest.fixture
def signed_repo(repo: GitRepo, keys: Keys) -> tuple[GitRepo, str]:
    return repo, _policy_repo(repo, keys, "signed")


def _noted_case(repo: GitRepo, key: Path | None) -> str:
    """The human workflow: new fixture, `oracle-gate note`, relock; committed (signed by key)."""
    repo.write(NEW_CASE, CASE_TEXT)
    repo.note_content("record the touching-ranges case", NEW_CASE)
    repo.relock(PKG)
    return repo.commit("reviewed fixture", signing_key=key)


def _reasons(report: object, path: str) -> str:
    return " ".join(f.reason for f in report.findings if f.path == path)  # type: ignore[attr-defined]


def test_owner_signed_note_passes(signed_repo: tuple[GitRepo, str], keys: Keys) -> None:
    repo, base = signed_repo
    report = repo.gate(base, _noted_case(repo, keys.alice))
    assert report.verdict_of(NEW_CASE) is Verdict.HUMAN_NOTED
    assert report.verdict_of(LOCK) is Verdict.HUMAN_NOTED
    assert report.verdict is Verdict.PASS


@pytest.mark.parametrize(
    "signer", [None, "bob", "mallory"], ids=["unsigned", "non-owner", "unknown-key"]
)
def test_note_not_signed_by_an_owner_is_rejected(
    signed_repo: tuple[GitRepo, str], keys: Keys, signer: str | None
) -> None:
    repo, base = signed_repo
    key = getattr(keys, signer) if signer else None
    report = repo.judge_paths(base, _noted_case(repo, key))
    assert report.verdict_of(NEW_CASE) is Verdict.REJECT
    assert OWNERS_MESSAGE in _reasons(report, NEW_CASE)
    assert report.verdict_of(LOCK) is Verdict.REJECT


def test_tampered_signed_commit_is_rejected(signed_repo: tuple[GitRepo, str], keys: Keys) -> None:
    repo, base = signed_repo
    honest = _noted_case(repo, keys.alice)
    # The agent rewrites alice's commit and keeps her signature header.
    raw = repo.git("cat-file", "commit", honest).replace("reviewed fixture", "reviewed fixture!")
    forged = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=repo.path,
        input=raw,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    assert forged != honest
    report = repo.judge_paths(base, forged)
    assert report.verdict_of(NEW_CASE) is Verdict.REJECT
    assert OWNERS_MESSAGE in _reasons(report, NEW_CASE)


def test_agent_adding_its_key_and_ownership_in_the_patch_is_rejected(
    signed_repo: tuple[GitRepo, str], keys: Keys
) -> None:
    repo, base = signed_repo
    repo.append(SIGNERS, f"alice@example.com {_public(keys.mallory)}\n")
    repo.append(SIGNERS, f"mallory@example.com {_public(keys.mallory)}\n")
    repo.append("CODEOWNERS", "/libs/intervals/ mallory@example.com\n")
    report = repo.judge_paths(base, _noted_case(repo, keys.mallory))
    assert report.verdict_of(NEW_CASE) is Verdict.REJECT
    assert report.verdict_of(SIGNERS) is Verdict.REJECT
    assert report.verdict_of("CODEOWNERS") is Verdict.REJECT


def test_agent_adding_itself_to_the_matrix_owners_is_rejected(
    signed_repo: tuple[GitRepo, str], keys: Keys
) -> None:
    repo, base = signed_repo
    repo.replace(
        f"{PKG}/invariants.yaml", '"@intervals-team"', '"@intervals-team", "bob@example.com"'
    )
    report = repo.judge_paths(base, _noted_case(repo, keys.bob))
    assert report.verdict_of(NEW_CASE) is Verdict.REJECT


def test_policy_in_the_head_is_ignored(signed_repo: tuple[GitRepo, str]) -> None:
    repo, base = signed_repo
    repo.write("oracle-gate.toml", 'notes = "review"\n')
    report = repo.judge_paths(base, _noted_case(repo, None))
    assert report.verdict_of(NEW_CASE) is Verdict.REJECT
    assert report.verdict_of("oracle-gate.toml") is Verdict.REJECT


def test_signed_policy_introduced_in_the_head_does_not_apply_yet(repo: GitRepo, keys: Keys) -> None:
    base = repo.commit_example()
    repo.write("oracle-gate.toml", 'notes = "signed"\n')
    report = repo.judge_paths(base, _noted_case(repo, None))
    assert report.verdict_of(NEW_CASE) is Verdict.HUMAN_NOTED


def test_trailer_on_a_commit_outside_the_patch_does_not_count(
    signed_repo: tuple[GitRepo, str], keys: Keys
) -> None:
    repo, _ = signed_repo
    trailer = {"Oracle-Change": f"{NEW_CASE} — new case", "Reviewed-by": "Alice"}
    base = repo.commit("alice's unrelated commit on main", trailer, signing_key=keys.alice)
    repo.write(NEW_CASE, CASE_TEXT)
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("agent adds the fixture"))
    assert report.verdict_of(NEW_CASE) is Verdict.REJECT


def test_signed_trailer_then_a_later_unsigned_edit_is_rejected(
    signed_repo: tuple[GitRepo, str], keys: Keys
) -> None:
    repo, base = signed_repo
    repo.write(NEW_CASE, CASE_TEXT)
    repo.relock(PKG)
    trailer = {"Oracle-Change": f"{NEW_CASE} — new case", "Reviewed-by": "Alice"}
    signed = repo.commit("alice adds a case", trailer, signing_key=keys.alice)
    assert repo.judge_paths(base, signed).verdict_of(NEW_CASE) is Verdict.HUMAN_NOTED
    repo.write(NEW_CASE, CASE_TEXT.replace("[5, 6]]}", "[5, 7]]}"))
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("agent edits it afterwards"))
    assert report.verdict_of(NEW_CASE) is Verdict.REJECT


def test_signed_entry_with_the_digest_of_other_content_does_not_count(
    signed_repo: tuple[GitRepo, str], keys: Keys
) -> None:
    repo, base = signed_repo
    other = blake3(b"some other content\n").hexdigest()
    repo.append(CHANGELOG, f"\n## case\n\n- `testdata/ranges/adjacent.json` blake3:{other}\n")
    repo.write(NEW_CASE, CASE_TEXT)
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("signed, wrong digest", signing_key=keys.alice))
    assert report.verdict_of(NEW_CASE) is Verdict.REJECT


def test_signed_entry_naming_a_look_alike_path_does_not_count(
    signed_repo: tuple[GitRepo, str], keys: Keys
) -> None:
    repo, base = signed_repo
    digest = blake3(CASE_TEXT.encode()).hexdigest()
    look_alike = "testdata/ranges/adj\u0430cent.json"  # Cyrillic a
    repo.append(CHANGELOG, f"\n## case\n\n- `{look_alike}` blake3:{digest}\n")
    signed = repo.commit("alice notes a look-alike path", signing_key=keys.alice)
    repo.write(NEW_CASE, CASE_TEXT)
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("agent adds the real path"))
    assert signed != base
    assert report.verdict_of(NEW_CASE) is Verdict.REJECT


def test_agent_commit_copying_a_signed_entry_is_judged_by_the_first_commit_holding_it(
    signed_repo: tuple[GitRepo, str], keys: Keys
) -> None:
    repo, base = signed_repo
    repo.write(NEW_CASE, CASE_TEXT)
    repo.note_content("case", NEW_CASE)
    repo.relock(PKG)
    repo.commit("agent writes the note itself")
    report = repo.judge_paths(
        base, repo.commit("alice signs an empty commit", signing_key=keys.alice)
    )
    assert report.verdict_of(NEW_CASE) is Verdict.REJECT


def test_root_harness_file_signed_by_the_root_owner_handle_passes(
    signed_repo: tuple[GitRepo, str], keys: Keys
) -> None:
    repo, base = signed_repo
    repo.write(".github/workflows/ci.yml", GATE_WORKFLOW)
    repo.note_content("CI on push", ".github/workflows/ci.yml")
    report = repo.judge_paths(base, repo.commit("ci", signing_key=keys.carol))
    assert report.verdict_of(".github/workflows/ci.yml") is Verdict.HUMAN_NOTED
    assert report.reviewers() == ("@carol",)


def test_root_harness_file_signed_by_a_package_owner_is_rejected(
    signed_repo: tuple[GitRepo, str], keys: Keys
) -> None:
    repo, base = signed_repo
    repo.write(".github/workflows/ci.yml", GATE_WORKFLOW)
    repo.note_content("CI on push", ".github/workflows/ci.yml")
    report = repo.judge_paths(base, repo.commit("ci", signing_key=keys.alice))
    assert report.verdict_of(".github/workflows/ci.yml") is Verdict.REJECT
    assert "note not signed by an owner of .github/workflows/ci.yml (@carol)" in _reasons(
        report, ".github/workflows/ci.yml"
    )


def test_signed_note_survives_the_base_moving_in_a_merge_group(
    signed_repo: tuple[GitRepo, str], keys: Keys, tmp_path: Path
) -> None:
    repo, _ = signed_repo
    repo.git("checkout", "-q", "-b", "pr")
    pr = _noted_case(repo, keys.alice)
    repo.git("checkout", "-q", "main")
    repo.append("README.md", "\nanother change landed first\n")
    main_tip = repo.commit("main moves")
    repo.git("checkout", "-q", "-b", "merge-group", main_tip)
    repo.git("merge", "-q", "--no-ff", "--no-edit", pr)  # the queue's own, unsigned merge commit
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"merge_group": {"base_sha": main_tip}}))
    done = run(
        "check",
        "--today",
        TODAY.isoformat(),
        cwd=repo.path,
        GITHUB_EVENT_NAME="merge_group",
        GITHUB_EVENT_PATH=str(event),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert main_tip[:12] in done.stdout.splitlines()[0]


def test_signed_policy_without_allowed_signers_is_a_gate_error(repo: GitRepo) -> None:
    repo.commit_example()
    repo.write("oracle-gate.toml", 'notes = "signed"\n')
    base = repo.commit("policy without signers")
    with pytest.raises(ConfigError, match=r"no \.oracle-gate/allowed_signers") as caught:
        repo.judge_paths(base, _noted_case(repo, None))
    assert f"`{caught.value}`" in FORMATS_DOC


def test_malformed_allowed_signers_is_a_config_error_naming_the_line(
    signed_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = signed_repo
    repo.append(SIGNERS, "dave@example.com no-key-here\n")
    base = repo.commit("bad signers line")
    with pytest.raises(ConfigError, match=r"allowed_signers:4") as caught:
        repo.judge_paths(base, _noted_case(repo, None))
    assert f"`{caught.value}`" in FORMATS_DOC


def _approvals(tmp_path: Path, names: list[str]) -> str:
    path = tmp_path / "approvals.json"
    path.write_text(json.dumps(names))
    return str(path)


@pytest.mark.parametrize(
    ("approvers", "code"),
    [(["alice@example.com"], 0), (["Intervals-Team"], 0), (["bob", "carol"], 1), ([], 1)],
)
def test_approvals_policy_counts_a_note_when_an_owner_approved(
    repo: GitRepo, keys: Keys, tmp_path: Path, approvers: list[str], code: int
) -> None:
    base = _policy_repo(repo, keys, "approvals")
    head = _noted_case(repo, None)
    args = ["check", "--base", base, "--head", head, "--today", TODAY.isoformat()]
    done = run(*args, "--approvals", _approvals(tmp_path, approvers), cwd=repo.path)
    assert done.returncode == code, done.stdout + done.stderr
    if code:
        assert "note not approved by an owner of libs/intervals" in done.stdout


def test_approvals_policy_without_the_file_is_exit_2(repo: GitRepo, keys: Keys) -> None:
    base = _policy_repo(repo, keys, "approvals")
    head = _noted_case(repo, None)
    done = run("check", "--base", base, "--head", head, cwd=repo.path)
    assert done.returncode == 2
    assert "--approvals" in done.stderr
