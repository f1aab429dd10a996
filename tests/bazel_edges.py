"""Bazel's own package edges for a workspace on disk: what the e2e tests hold the graph to."""

from __future__ import annotations

import subprocess
from pathlib import Path

from oracle_gate.bazel.query import bazel_query_edges


def bazel_package_edges(root: Path, user_root: Path) -> set[tuple[str, str]]:
    """``bazel query``'s package edges in ``root``, with its own output root, the server
    shut down after."""
    (root / ".bazelrc").write_text(f"startup --output_user_root={user_root}\n")
    try:
        return {(a, b) for a, b, _ in bazel_query_edges(root, timeout=600)}
    finally:
        subprocess.run(["bazel", "shutdown"], cwd=root, capture_output=True, timeout=120)
