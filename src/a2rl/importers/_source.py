"""The folder being imported, read as untrusted input.

Another harness (or whoever handed over its results) made that folder, so nothing in it is
followed or opened blindly: every path is walked one component at a time from a directory
descriptor with O_NOFOLLOW (no symbolic link is followed, inside the folder or out of it),
only regular files are opened (FIFOs, devices and sockets are refused from lstat, before any
open; the open itself is non-blocking and re-checked with fstat), sizes are checked from
fstat before a byte is read, and names with control characters, undecodable bytes or absurd
lengths are refused. What was read and what was refused is kept, for the run's manifest
(`MANIFEST`) and its import notes.

The manifest, `import_manifest.json` in the imported run folder:
  {"version": 1, "harness": str, "source": str (the folder, absolute),
   "read": [{"path": source-relative str, "bytes": int, "sha256": str, "use": str}],
   "refused": [{"path": source-relative str, "reason": str}],
   "files": [run-folder-relative str, …]}
`files` lists every file the import wrote into the run folder (the only files a report of an
imported run needs to publish); `read` lists every source file whose bytes were used.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from a2rl._errors import A2RLError

MANIFEST = "import_manifest.json"
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 1024
MAX_DEPTH = 32
MAX_ENTRIES = 50_000
"""Directory entries looked at in one walk; the rest of a huge tree is refused as one item."""
MAX_JSON_BYTES = 64 << 20
MAX_STREAM_BYTES = 256 << 20
"""The agent's stream: a transcript larger than this is refused, not truncated."""
MAX_NOTE_BYTES = 1 << 20
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_OPEN_DIR = _OPEN | os.O_DIRECTORY

Kind = Literal["file", "dir", "link", "special"]


def bad_name(name: str) -> str | None:
    """Why a directory entry's name is refused (None: it is fine)."""
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError:
        return "name is not valid UTF-8"
    if name in ("", ".", "..") or "/" in name:
        return "name is not a plain file name"
    if len(raw) > MAX_NAME_BYTES:
        return f"name longer than {MAX_NAME_BYTES} bytes"
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029" for c in name):
        return "name holds control characters"
    return None


def _kind(mode: int) -> Kind:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "special"


def _special(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def _refusal(kind: Kind, mode: int) -> str:
    if kind == "link":
        return "a symbolic link (never followed: it may point outside the folder)"
    if kind == "special":
        return f"{_special(mode)} (only regular files are read)"
    return "a folder where a file was expected"


class Source:
    """An import's source folder. `read_*` return None for a missing file (nothing recorded)
    and for a refused one (recorded in `refused` with the reason)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        try:
            self._fd = os.open(root, _OPEN_DIR)
        except OSError as exc:
            raise A2RLError(f"cannot open {root} as a folder: {exc.strerror}",
                            "pass the result folder itself (a real folder, readable by you)"
                            ) from exc
        self.read: list[dict[str, object]] = []
        self.refused: list[dict[str, str]] = []

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- walking -------------------------------------------------------------------------

    def refuse(self, rel: str, reason: str) -> None:
        if not any(r["path"] == rel for r in self.refused):
            self.refused.append({"path": rel, "reason": reason})

    def refused_notes(self) -> list[str]:
        return [f"{r['path']}: {r['reason']}" for r in self.refused]

    def _parts(self, rel: str) -> list[str]:
        parts = [p for p in rel.split("/") if p]
        for p in parts:
            if bad_name(p):
                raise ValueError(rel)
        return parts

    def _open_parent(self, parts: list[str]) -> int | None:
        """A descriptor of the folder holding the last of `parts` (caller closes it), or None
        when a component is missing or no real folder (refused when it is a link/special)."""
        fd = os.dup(self._fd)
        for i, part in enumerate(parts[:-1]):
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except OSError:
                os.close(fd)
                return None
            kind = _kind(st.st_mode)
            if kind != "dir":
                os.close(fd)
                if kind in ("link", "special"):
                    self.refuse("/".join(parts[:i + 1]), _refusal(kind, st.st_mode))
                return None
            try:
                nxt = os.open(part, _OPEN_DIR, dir_fd=fd)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    self.refuse("/".join(parts[:i + 1]), "changed into a non-folder while read")
                return None
            os.close(fd)
            fd = nxt
        return fd

    def kind(self, rel: str) -> Kind | None:
        """What is at `rel` without following anything (None: nothing, or not reachable)."""
        parts = self._parts(rel)
        if not parts:
            return "dir"
        fd = self._open_parent(parts)
        if fd is None:
            return None
        try:
            return _kind(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            return None
        finally:
            os.close(fd)

    def exists(self, rel: str) -> bool:
        return self.kind(rel) is not None

    def is_dir(self, rel: str) -> bool:
        return self.kind(rel) == "dir"

    # --- reading -------------------------------------------------------------------------

    def read_bytes(self, rel: str, limit: int, use: str) -> bytes | None:
        parts = self._parts(rel)
        fd = self._open_parent(parts)
        if fd is None:
            return None
        try:
            return self._read_at(fd, parts[-1], rel, limit, use)
        finally:
            os.close(fd)

    def read_text(self, rel: str, limit: int, use: str) -> str | None:
        data = self.read_bytes(rel, limit, use)
        return None if data is None else data.decode("utf-8", errors="replace")

    def read_json(self, rel: str, use: str, fix: str) -> object:
        """The JSON value of `rel` (None: missing or refused); A2RLError with `fix` when it is
        not JSON."""
        text = self.read_text(rel, MAX_JSON_BYTES, use)
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError as exc:
            raise A2RLError(f"{self.root / rel} is not JSON: {exc}", fix) from None

    def _read_at(self, dir_fd: int, name: str, rel: str, limit: int, use: str) -> bytes | None:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return None
        kind = _kind(st.st_mode)
        if kind != "file":
            self.refuse(rel, _refusal(kind, st.st_mode))
            return None
        if st.st_size > limit:
            self.refuse(rel, f"{st.st_size} bytes, over the {limit}-byte limit for {use}")
            return None
        try:
            fd = os.open(name, _OPEN, dir_fd=dir_fd)
        except OSError as exc:
            self.refuse(rel, "became a symbolic link while read" if exc.errno == errno.ELOOP
                        else f"cannot be opened: {exc.strerror}")
            return None
        try:
            fst = os.fstat(fd)
            if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
                self.refuse(rel, "was replaced while read")
                return None
            if fst.st_size > limit:
                self.refuse(rel, f"{fst.st_size} bytes, over the {limit}-byte limit for {use}")
                return None
            chunks: list[bytes] = []
            total = 0
            while total <= limit:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            if total > limit:  # it grew after fstat
                self.refuse(rel, f"grew past the {limit}-byte limit for {use} while read")
                return None
        except OSError as exc:
            self.refuse(rel, f"cannot be read: {exc.strerror}")
            return None
        finally:
            os.close(fd)
        data = b"".join(chunks)
        self.read.append({"path": rel, "bytes": len(data),
                          "sha256": hashlib.sha256(data).hexdigest(), "use": use})
        return data

    def files(self, rel_dir: str, skip_dirs: set[str]) -> Iterator[tuple[str, int, int]]:
        """(source-relative path, parent folder descriptor, size) of each regular file under
        `rel_dir`, depth first in name order; links, special files and bad names are refused,
        folders named in `skip_dirs` left out. The descriptor is valid until the next item."""
        parts = self._parts(rel_dir)
        if parts:
            fd = self._open_parent([*parts, "."])
        else:
            fd = os.dup(self._fd)
        if fd is None:
            return
        seen = [0]
        yield from self._walk(fd, "/".join(parts), 0, skip_dirs, seen)

    def _walk(self, fd: int, prefix: str, depth: int, skip_dirs: set[str],
              seen: list[int]) -> Iterator[tuple[str, int, int]]:
        try:
            with os.scandir(fd) as it:
                names = sorted(e.name for e in it)
        except OSError:
            os.close(fd)
            return
        try:
            for name in names:
                rel = f"{prefix}/{name}" if prefix else name
                seen[0] += 1
                if seen[0] > MAX_ENTRIES:
                    self.refuse(prefix or ".", f"more than {MAX_ENTRIES} entries: the rest "
                                "of this folder was not looked at")
                    return
                if why := bad_name(name):
                    self.refuse(ascii(rel), why)
                    continue
                if len(rel.encode()) > MAX_PATH_BYTES:
                    self.refuse(rel[:200] + "…", f"path longer than {MAX_PATH_BYTES} bytes")
                    continue
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                kind = _kind(st.st_mode)
                if kind == "dir":
                    if name in skip_dirs:
                        continue
                    if depth + 1 >= MAX_DEPTH:
                        self.refuse(rel, f"nested deeper than {MAX_DEPTH} folders")
                        continue
                    try:
                        sub = os.open(name, _OPEN_DIR, dir_fd=fd)
                    except OSError:
                        self.refuse(rel, "folder cannot be opened (or became a link)")
                        continue
                    yield from self._walk(sub, rel, depth + 1, skip_dirs, seen)
                elif kind == "file":
                    yield rel, fd, st.st_size
                else:
                    self.refuse(rel, _refusal(kind, st.st_mode))
        finally:
            os.close(fd)

    def read_in(self, dir_fd: int, rel: str, limit: int, use: str) -> bytes | None:
        """Read file `rel` (from `files`) through its parent's descriptor."""
        return self._read_at(dir_fd, rel.rsplit("/", 1)[-1], rel, limit, use)

    # --- the manifest --------------------------------------------------------------------

    def write_manifest(self, run_dir: Path, harness: str) -> None:
        written = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*")
                         if p.is_file() and not p.is_symlink() and p.name != MANIFEST)
        manifest = {"version": 1, "harness": harness, "source": str(self.root),
                    "read": self.read, "refused": self.refused, "files": written}
        (run_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def find_marked(root: Path, marker: str, *, limit: int = 100_000) -> list[Path]:
    """Folders under `root` holding `marker` as a regular file, walked without following any
    link (a link to a folder elsewhere is not searched)."""
    found: list[Path] = []

    def walk(path: Path, depth: int) -> None:
        if depth > MAX_DEPTH or len(found) >= limit:
            return
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            try:
                if e.name == marker and e.is_file(follow_symlinks=False):
                    found.append(path)
                elif e.is_dir(follow_symlinks=False) and not bad_name(e.name):
                    walk(Path(e.path), depth + 1)
            except OSError:
                continue

    walk(root, 0)
    return sorted(set(found))[:limit]
