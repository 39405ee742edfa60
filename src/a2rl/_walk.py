"""Walking and removing folders the agent wrote, safely.

Python 3.11's `os.fwalk`, `os.walk`, `Path.rglob` and `shutil.rmtree` recurse once per folder
level, so a folder 1,000 levels deep (`mkdir -p a/a/a/…`, cheap for an agent) raises
RecursionError in every one of them, and `os.walk`/`rglob` follow a folder the agent swaps for a
symlink between listing and descending. Here:

- `fwalk` walks iteratively, top-down like `os.fwalk(follow_symlinks=False)`: each folder is
  opened relative to its parent's descriptor with O_NOFOLLOW and checked to be the folder that
  was listed (a swap mid-walk is skipped, never followed); folders deeper than `max_depth` are
  not entered and are counted in `WalkStats.too_deep`, so a caller can say what it left out.
- `rmtree` removes a tree of any depth with a bounded number of open descriptors: a folder
  deeper than a few levels is first moved up next to the tree's root, then removed on its own.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

MAX_DEPTH = 128
"""Folder levels below the root that `fwalk` enters by default (no real project nests deeper;
the open descriptors of one walk stay below this)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


@dataclass
class WalkStats:
    """What a walk left out."""

    too_deep: list[str] = field(default_factory=list)
    """Folders not entered because they lie deeper than `max_depth` (relative paths)."""
    swapped: list[str] = field(default_factory=list)
    """Folders that were no longer the listed folder when opened (replaced by a link or
    another folder mid-walk): not entered."""
    unreadable: list[str] = field(default_factory=list)
    """Folders that could not be opened or listed (permissions, removed mid-walk)."""

    @property
    def complete(self) -> bool:
        return not (self.too_deep or self.swapped or self.unreadable)


def _open_dir(name: str, dir_fd: int | None, expected: os.stat_result | None) -> int | None:
    """A descriptor of folder `name` (relative to `dir_fd`), or None when it is not a folder any
    more or is not the one listed (`expected`: its lstat when it was listed)."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    if expected is not None:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (expected.st_dev, expected.st_ino):
            os.close(fd)
            return None
    return fd


def _list(fd: int) -> list[tuple[str, os.stat_result | None]]:
    """Each entry of the folder open at `fd` with its lstat (None when it vanished)."""
    out: list[tuple[str, os.stat_result | None]] = []
    with os.scandir(fd) as it:
        for entry in it:
            try:
                out.append((entry.name, entry.stat(follow_symlinks=False)))
            except OSError:
                out.append((entry.name, None))
    return out


def fwalk(top: str | os.PathLike[str], *, max_depth: int = MAX_DEPTH,
          stats: WalkStats | None = None) -> Iterator[tuple[str, list[str], list[str], int]]:
    """Like `os.fwalk(top, follow_symlinks=False)`, top-down, without recursion: yields
    `(folder, dirs, files, folder_fd)` with `folder` relative to `top` ("." for the root) and
    joined with "/", `dirs` the real sub-folders (prune it in place to skip some) and `files`
    every other entry (files, symlinks to anything, fifos, sockets). `folder_fd` stays open
    while the walk is inside that folder. Nothing is followed; what was left out is added to
    `stats`."""
    stats = stats if stats is not None else WalkStats()
    root_fd = _open_dir(os.fspath(top), None, None)
    if root_fd is None:
        stats.unreadable.append(".")
        return
    # frames of the folders being walked: (relative path, descriptor, sub-folders left, depth)
    stack: list[tuple[str, int, list[tuple[str, os.stat_result]], int]] = []
    current: tuple[str, int, int] | None = (".", root_fd, 0)
    try:
        while True:
            if current is not None:
                rel, fd, depth = current
                current = None
                try:
                    listed = _list(fd)
                except OSError:
                    os.close(fd)
                    stats.unreadable.append(rel)
                    continue
                folders = {n: st for n, st in listed
                           if st is not None and stat.S_ISDIR(st.st_mode)}
                names = list(folders)
                files = [n for n, st in listed if n not in folders]
                stack.append((rel, fd, [], depth))
                yield rel, names, files, fd
                stack[-1][2].extend((n, folders[n]) for n in reversed(names) if n in folders)
            if not stack:
                return
            rel, fd, todo, depth = stack[-1]
            if not todo:
                stack.pop()
                os.close(fd)
                continue
            name, st = todo.pop()
            child = name if rel == "." else f"{rel}/{name}"
            if depth + 1 > max_depth:
                stats.too_deep.append(child)
                continue
            child_fd = _open_dir(name, fd, st)
            if child_fd is None:
                stats.swapped.append(child)
                continue
            current = (child, child_fd, depth + 1)
    finally:
        for _rel, fd, _todo, _depth in stack:
            os.close(fd)


_HOIST_DEPTH = 32
"""`rmtree` moves a folder this deep up beside the root before going on, so at most this many
descriptors are open at once, whatever the depth."""


def rmtree(path: str | os.PathLike[str], *, missing_ok: bool = True) -> None:
    """Remove `path` (a folder tree of any depth, or a file or link) without recursion and
    without following links. Read-only folders are made writable to empty them (owner only)."""
    path = Path(path)
    try:
        os.lstat(path)
    except FileNotFoundError:
        if missing_ok:
            return
        raise
    parent_fd = os.open(path.parent, _DIR_FLAGS)
    try:
        rmtree_at(parent_fd, path.name)
    finally:
        os.close(parent_fd)


def rmtree_at(parent_fd: int, name: str) -> None:
    """`rmtree` of the entry `name` of the folder open at `parent_fd` (a caller that checked
    that folder keeps the descriptor it checked: nothing on the way is looked up again)."""
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        _unlink(name, parent_fd)
        return
    queue = [name]  # folders directly inside the parent, to remove whole
    hoisted = 0
    while queue:
        hoisted = _remove_dir(parent_fd, queue.pop(), name, queue, hoisted)


def _remove_dir(parent_fd: int, name: str, root_name: str, queue: list[str], hoisted: int) -> int:
    """Remove folder `name` in `parent_fd`; folders deeper than `_HOIST_DEPTH` inside it are
    moved next to it (names `<root>.rm-<pid>-<n>`) and queued. Returns the hoist counter."""
    fd = _open_for_removal(name, parent_fd)
    if fd is None:  # a file or link took its place
        _unlink(name, parent_fd)
        return hoisted
    # frames: (descriptor, name in its parent, entries left); the first one's parent is parent_fd
    frames: list[tuple[int, str, list[str]]] = [(fd, name, _names(fd))]
    try:
        while frames:
            fd, fname, left = frames[-1]
            if not left:
                frames.pop()
                os.close(fd)
                try:
                    os.rmdir(fname, dir_fd=frames[-1][0] if frames else parent_fd)
                except FileNotFoundError:
                    pass
                continue
            entry = left.pop()
            try:
                st = os.stat(entry, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not stat.S_ISDIR(st.st_mode):
                _unlink(entry, fd)
            elif len(frames) >= _HOIST_DEPTH:
                hoisted += 1
                moved = f"{root_name}.rm-{os.getpid()}-{hoisted}"
                os.rename(entry, moved, src_dir_fd=fd, dst_dir_fd=parent_fd)
                queue.append(moved)
            elif (child := _open_for_removal(entry, fd)) is not None:
                frames.append((child, entry, _names(child)))
            else:  # swapped for a file or link after the stat: remove that instead
                _unlink(entry, fd)
    finally:
        for frame_fd, _name, _left in frames:
            os.close(frame_fd)
    return hoisted


def _open_for_removal(name: str, dir_fd: int) -> int | None:
    """A descriptor of folder `name`, its owner's rights added when it cannot be opened as it
    is (mode 000); None when `name` is no folder (any more)."""
    fd = _open_dir(name, dir_fd, None)
    if fd is None and stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
        os.chmod(name, stat.S_IRWXU, dir_fd=dir_fd)
        fd = _open_dir(name, dir_fd, None)
    return fd


def _unlink(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def _names(fd: int) -> list[str]:
    """The entries of the folder at `fd`, made listable and writable by its owner first."""
    st = os.fstat(fd)
    if st.st_mode & stat.S_IRWXU != stat.S_IRWXU:
        os.fchmod(fd, stat.S_IMODE(st.st_mode) | stat.S_IRWXU)
    return os.listdir(fd)


def read_text_files(top: str | os.PathLike[str], *, accept: Callable[[str], bool],
                    enter: Callable[[str], bool] = lambda rel: True, max_bytes: int,
                    max_total: int | None = None, max_files: int | None = None,
                    max_depth: int = MAX_DEPTH) -> dict[str, str]:
    """The text of the regular files under `top` whose relative path `accept` takes, in sorted
    order, read through `fwalk`'s descriptors: never through a link, never blocking on a FIFO,
    at most `max_bytes` each (larger files are left out), `max_total` in all and `max_files`
    files. `enter(rel)` says whether to walk into a sub-folder."""
    out: dict[str, str] = {}
    total = 0
    if not os.path.isdir(top):
        return out
    for folder, dirs, files, fd in fwalk(top, max_depth=max_depth):
        prefix = "" if folder == "." else folder + "/"
        dirs[:] = sorted(d for d in dirs if enter(prefix + d))
        for name in sorted(files):
            rel = prefix + name
            if not accept(rel):
                continue
            try:
                file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                                  dir_fd=fd)
            except OSError:
                continue
            with os.fdopen(file_fd, "rb") as fh:
                st = os.fstat(file_fd)
                if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
                    continue
                data = fh.read(max_bytes)
            if max_total is not None and total + len(data) > max_total:
                return out
            total += len(data)
            out[rel] = data.decode(errors="replace")
            if max_files is not None and len(out) >= max_files:
                return out
    return out
