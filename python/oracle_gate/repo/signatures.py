"""Who signed a commit: git's own SSH signature check against the parent's allowed signers.

The allowed-signers file (git's format, ``principals [options] keytype key``)
is read from the **parent** commit, so a patch cannot add its own key. A
commit counts as signed by the principals of the allowed-signers lines whose
key made a signature ``git verify-commit`` calls good. Other signature kinds
(OpenPGP, X.509) never match: their key ids are not SSH key fingerprints, so
a key that happens to sit in the CI runner's keyring proves nothing here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import shlex
import tempfile
from pathlib import Path

from oracle_gate.errors import ConfigError, GitError
from oracle_gate.repo.git import git
from oracle_gate.repo.trees import GitTree

__all__ = ["ALLOWED_SIGNERS", "AllowedSigners", "read_allowed_signers", "signers_of"]

ALLOWED_SIGNERS = ".oracle-gate/allowed_signers"
_KEY_TYPES = ("ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-")


class AllowedSigners:
    """The parent's allowed-signers file: its bytes, and principals by key fingerprint."""

    def __init__(self, text: bytes, principals: dict[str, frozenset[str]]) -> None:
        self.text = text
        self.principals = principals


def _fingerprint(blob: str, line: int) -> str:
    """``SHA256:...`` as ssh-keygen and git print it, from a base64 public key."""
    try:
        raw = base64.b64decode(blob, validate=True)
    except binascii.Error:
        raise ConfigError("public key is not base64", ALLOWED_SIGNERS, line) from None
    return "SHA256:" + base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")


def _parse_line(text: str, line: int) -> tuple[str, frozenset[str]] | None:
    try:
        fields = shlex.split(text, comments=True)
    except ValueError:
        raise ConfigError("unbalanced quotes", ALLOWED_SIGNERS, line) from None
    if not fields:
        return None
    for index, field in enumerate(fields[1:-1], start=1):
        if field.startswith(_KEY_TYPES):
            principals = frozenset(p.strip().lower() for p in fields[0].split(",") if p.strip())
            return _fingerprint(fields[index + 1], line), principals
    raise ConfigError("expected 'principals [options] key-type base64-key'", ALLOWED_SIGNERS, line)


def read_allowed_signers(parent: GitTree) -> AllowedSigners | None:
    """The parent's allowed signers, or None when the parent has no such file.

    Raises:
        ConfigError: a line is not in git's allowed-signers format (file and line named).
    """
    text = parent.read_optional(ALLOWED_SIGNERS)
    if text is None:
        return None
    principals: dict[str, frozenset[str]] = {}
    for number, line in enumerate(text.decode("utf-8", "replace").splitlines(), start=1):
        parsed = _parse_line(line, number)
        if parsed:
            key, names = parsed
            principals[key] = principals.get(key, frozenset()) | names
    return AllowedSigners(text, principals)


def signers_of(
    repo: Path, commits: list[str], allowed: AllowedSigners
) -> dict[str, frozenset[str]]:
    """For each commit, the principals (lower case) whose key made a good signature on it.

    An unsigned commit, a bad signature or a key not in ``allowed`` gives an
    empty set. ``git verify-commit`` decides; ``%GK`` names the key it used.
    """
    found: dict[str, frozenset[str]] = {}
    with tempfile.TemporaryDirectory(prefix="oracle-gate-signers-") as scratch:
        signers_file = Path(scratch) / "allowed_signers"
        signers_file.write_bytes(allowed.text)
        config = ("-c", f"gpg.ssh.allowedSignersFile={signers_file}")
        for commit in dict.fromkeys(commits):
            try:
                git(repo, *config, "verify-commit", commit)
            except GitError:
                found[commit] = frozenset()
                continue
            key = git(repo, *config, "show", "-s", "--format=%GK", commit).strip()
            found[commit] = allowed.principals.get(key, frozenset())
    return found
