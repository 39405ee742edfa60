"""What of the host every sandbox shows, read-only: the system folders and the Python
environment, and the one test of whether a path lies inside a folder (which mounts, masks and
walks use to decide what a folder already covers)."""

from __future__ import annotations

import glob
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt")
"""The host's system folders every sandbox mounts read-only (the agent's and the scorer's)."""


def within(path: Path, root: Path) -> bool:
    """`path` is `root` or lies under it (both as given: resolve them first where links
    matter)."""
    return path == root or root in path.parents


def within_any(path: Path, roots: Iterable[Path]) -> bool:
    return any(within(path, root) for root in roots)


def under_system_dir(path: Path) -> bool:
    """`path` is a system folder or lies in one (so a sandbox shows it already)."""
    return within_any(path, (Path(d) for d in SYSTEM_DIRS))


def interpreter_roots() -> list[Path]:
    """Folders the Python interpreter needs: the venv and the base installation."""
    return sorted({Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
                   Path(sys.executable).resolve().parent.parent})


def python_roots() -> list[Path]:
    """Folders the agent's Python needs: `interpreter_roots()`, and a2rl's own source when it
    is an editable install (its .pth points outside site-packages)."""
    import a2rl

    return sorted({*interpreter_roots(), Path(a2rl.__file__).resolve().parent.parent})


def python_mounts(roots: Sequence[Path]) -> list[Path]:
    """The Python roots a sandbox mounts itself: those outside the system folders (a base
    interpreter in /usr is shown with /usr)."""
    return [root for root in roots if not under_system_dir(root)]


def mounted_roots(read_only: Sequence[Path] = (), *,
                  python: Sequence[Path] | None = None) -> list[Path]:
    """Every host folder a sandbox makes visible at its own path (what masks are checked
    against): the system folders, the Python roots (default `python_roots()`) and
    `read_only`."""
    return ([Path(d).resolve() for d in SYSTEM_DIRS if Path(d).is_dir()]
            + list(python_roots() if python is None else python)
            + [Path(p).resolve() for p in read_only])


def gpu_devices() -> list[str]:
    return sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri/*"))
