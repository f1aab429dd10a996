"""bubblewrap's command line for one child: what it sees read-only, what it may write,
what is hidden under an empty tmpfs, and the sizes of its private file systems."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from oracle_gate.runtime.limits import Limits
from oracle_gate.runtime.privileges import (
    inside,
)

__all__ = ["SANDBOX_TMP", "Place", "bwrap_options", "layered_mounts", "mount_points"]


SANDBOX_TMP = "/tmp"


_SANDBOX_SHM = "/dev/shm"
# The host's runtime sockets (a user's session bus, the Docker daemon's) are no child's
# business: connecting to a socket needs no write access to the file system it is on.
_HOST_ONLY = ("/run",)
# A tmpfs that only hides what lies beneath it holds nothing but mount points.
_EMPTY_TMPFS = 64 << 10


@dataclass(frozen=True)
class Place:
    """Where a checkout (``source``) appears inside the sandbox (``shown_at``)."""

    source: str
    shown_at: str

    def moved(self, path: str) -> str:
        """``path`` as the sandboxed child sees it (paths outside the checkout stay)."""
        return self.shown_at + path[len(self.source) :] if inside(path, self.source) else path

    def moved_back(self, path: str) -> str:
        """Where ``path``, as the sandboxed child sees it, is in the checkout."""
        return self.source + path[len(self.shown_at) :] if inside(path, self.shown_at) else path


def bwrap_options(
    visible: Sequence[str],
    masked: Sequence[Path] = (),
    hidden: Sequence[str] = (),
    place: Place | None = None,
    writable: Sequence[str] = (),
    tmpfs_size: int = Limits.tmpfs_size,
) -> list[str]:
    """Read-only root, private /tmp and /dev/shm, the host's /run gone.

    ``hidden`` directories (the user's repository: its working tree and git
    directory) are empty; ``visible`` paths stay, read-only, even inside /tmp or
    a hidden directory; ``place``'s checkout appears, read-only, where it says;
    ``masked`` directories (in the checkout) are empty and ``masked`` files read
    as empty. Of the tmpfs mounts, /tmp, /dev/shm and the ``writable`` ones (the
    private home, one of the ``hidden`` paths) hold up to ``tmpfs_size`` bytes
    each; every other one is empty and read-only, and so is the tmpfs bubblewrap
    makes /dev on.
    """
    hiding = [p for p in _HOST_ONLY if os.path.isdir(p)]
    layered = layered_mounts([SANDBOX_TMP, *hidden, *hiding], visible, place, writable)
    for path in masked:
        shown = place.moved(str(path)) if place else str(path)
        if path.is_dir() and not path.is_symlink():
            layered += ["--tmpfs", shown]
        elif path.exists() and not path.is_symlink():
            layered += ["--ro-bind", "/dev/null", shown]
    layered += ["--tmpfs", _SANDBOX_SHM]
    mounts = _operations(layered)
    options = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    options += _sized(mounts, writable, tmpfs_size)
    tmpfs = [op[1] for op in mounts if op[0] == "--tmpfs"]
    for empty in ["/dev", *(p for p in tmpfs if _is_empty(p, writable))]:
        options += ["--remount-ro", empty]
    return [*options, "--die-with-parent", "--new-session"]


def _operations(options: Sequence[str]) -> list[tuple[str, ...]]:
    """``--tmpfs PATH`` and ``--ro-bind SOURCE PATH`` options, one tuple each."""
    operations: list[tuple[str, ...]] = []
    index = 0
    while index < len(options):
        width = 3 if options[index] == "--ro-bind" else 2
        operations.append(tuple(options[index : index + width]))
        index += width
    return operations


def _is_empty(path: str, writable: Sequence[str]) -> bool:
    """Whether the tmpfs at ``path`` only hides what lies beneath it."""
    return path not in (SANDBOX_TMP, _SANDBOX_SHM, *writable)


def _sized(
    operations: Sequence[tuple[str, ...]], writable: Sequence[str], tmpfs_size: int
) -> list[str]:
    """The operations as bubblewrap options: each tmpfs with its size and mode, and every
    directory on the way to a mount point inside a tmpfs made first, searchable by all
    (bubblewrap 0.8 makes them ``0700``, which only the sandbox's root could pass)."""
    options: list[str] = []
    tmpfs: list[str] = []
    made: set[str] = set()
    for operation in operations:
        target = operation[-1]
        enclosing = max((root for root in tmpfs if inside(target, root)), key=len, default=None)
        if enclosing is not None and target != enclosing:
            for parent in _parents(target, enclosing):
                if parent not in made:
                    made.add(parent)
                    options += ["--perms", "0755", "--dir", parent]
        if operation[0] == "--tmpfs":
            tmpfs.append(target)
            if target in (SANDBOX_TMP, _SANDBOX_SHM):
                options += ["--perms", "1777", "--size", str(tmpfs_size)]
            elif target in writable:
                options += ["--perms", "0700", "--size", str(tmpfs_size)]
            else:
                options += ["--size", str(_EMPTY_TMPFS)]
        options += operation
    return options


def _parents(path: str, root: str) -> list[str]:
    """The directories strictly between ``root`` and ``path``, outermost first."""
    parts = path[len(root.rstrip(os.sep)) :].strip(os.sep).split(os.sep)[:-1]
    return [os.path.join(root, *parts[: depth + 1]) for depth in range(len(parts))]


def layered_mounts(
    hidden: Sequence[str],
    visible: Sequence[str],
    place: Place | None = None,
    keep: Sequence[str] = (),
) -> list[str]:
    """Mounts that hide ``hidden``, show ``visible`` and put ``place``'s checkout where
    it says, outermost first, so a path shown inside a hidden one stays (the checkout
    under /tmp) and a path hidden inside a shown one stays hidden (a repository inside
    the virtual environment's directory). A mount that would change nothing is left
    out: a hidden directory inside another hidden one would show up there as an empty
    mount point, and one inside the placed checkout is the checkout's own; but the
    hidden paths in ``keep`` get a tmpfs of their own wherever they are (the private
    home directory, which the child writes)."""
    wanted: dict[str, str | None] = {os.path.realpath(p): None for p in hidden}
    for path in visible:
        wanted.setdefault(os.path.realpath(path), os.path.realpath(path))
    if place is not None:
        wanted = {p: s for p, s in wanted.items() if s is not None or not inside(p, place.shown_at)}
        wanted[place.shown_at] = place.source
    kept: dict[str, str | None] = {}
    for path in sorted(wanted, key=lambda p: (p.count(os.sep), p)):
        enclosing = max((k for k in kept if inside(path, k)), key=len, default=None)
        # the host's own content shows here: nothing covers it, or a bind of itself
        shown = enclosing is None or kept[enclosing] == enclosing
        source = wanted[path]
        if shown == (source is None) or (source is not None and source != path) or path in keep:
            kept[path] = source
    options: list[str] = []
    for path, source in kept.items():
        options += ["--tmpfs", path] if source is None else ["--ro-bind", source, path]
    return options


def mount_points(place: Place, visible: Sequence[str]) -> None:
    """Directories in the checkout for the ``visible`` paths that will be shown inside it
    (a virtual environment in the repository): bubblewrap cannot make them in a
    read-only bind."""
    for path in visible:
        real = os.path.realpath(path)
        if inside(real, place.shown_at) and real != place.shown_at and os.path.isdir(real):
            os.makedirs(place.moved_back(real), exist_ok=True)
