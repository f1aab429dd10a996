"""Where the gate keeps its own files for a repository: the user's cache, never the tree.

``check`` must not write into the working tree (an untracked directory is
noise in ``git status``, and a pre-commit run would see it), so the health log
and the stat cache live in ``$XDG_CACHE_HOME/oracle-gate/<repo id>`` (default
``~/.cache``). The id is the directory name plus a hash of its absolute path,
so two clones never share entries and a human can still tell them apart.
"""

from __future__ import annotations

import os
from pathlib import Path

from blake3 import blake3

__all__ = ["cache_dir", "cache_home"]


def cache_home() -> Path:
    """The user's cache root (``$XDG_CACHE_HOME``, default ``~/.cache``)."""
    # XDG: a relative XDG_CACHE_HOME is invalid and must be ignored.
    given = os.environ.get("XDG_CACHE_HOME", "")
    if given and os.path.isabs(given):
        return Path(given)
    return Path.home() / ".cache"


def cache_dir(repo: Path) -> Path:
    """The gate's cache directory for ``repo`` (not created here)."""
    absolute = str(repo.resolve())
    repo_id = f"{repo.resolve().name or 'root'}-{blake3(absolute.encode()).hexdigest()[:16]}"
    return cache_home() / "oracle-gate" / repo_id
