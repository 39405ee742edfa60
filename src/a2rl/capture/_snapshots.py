"""Code snapshots: the agent's files at each submission (and every few minutes), in a shadow git
repository inside the run directory, outside the workspace.

Everything in the workspace except the read-only base model and data is captured. Files larger
than `max_file_bytes` (weights, datasets) are not copied: `LARGE_FILES.json` at the root of each
snapshot lists them with size and sha256.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from a2rl._util import utcnow
from a2rl._walk import WalkStats, fwalk
from a2rl.capture._closing import STORAGE_ERRNOS

# The base model, the data and the docs a2rl wrote are not the agent's work.
EXCLUDED_TOP = ("model", "data", "description.md", "instructions.md", "timer.sh")
NOT_RECORDED = "NOT_RECORDED.json"
"""In a snapshot: the folders its walk left out (deeper than the cap, swapped mid-walk,
unreadable), written only when there are any."""
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE, _SYMLINK = "100644", "120000"
"""Modes of the entries a snapshot records (files are recorded without their mode bits)."""
_GIT_ENV = {"GIT_AUTHOR_NAME": "a2rl", "GIT_AUTHOR_EMAIL": "a2rl@localhost",
            "GIT_COMMITTER_NAME": "a2rl", "GIT_COMMITTER_EMAIL": "a2rl@localhost"}


class LargeFile(BaseModel):
    path: str
    """Relative to the workspace."""
    size: int
    sha256: str


class Snapshot(BaseModel):
    """One line of `code-history.jsonl` (the index of the shadow repository)."""

    tag: str
    """`s0001` for the snapshot taken when submission s0001 arrived, `t0003` for periodic ones."""
    commit: str
    """Commit id in `code-history.git` (outside the workspace)."""
    taken_at: str
    elapsed_s: float
    """Seconds of the agent's budget used."""
    files: int
    """Files captured (copied or listed in LARGE_FILES.json)."""
    changed: list[str]
    """Paths added, modified or deleted since the previous snapshot."""


class CodeRecorder:
    """Takes the snapshots of one workspace into `code-history.git`.

    A snapshot is streamed into `git fast-import` as it is read: one pack file (and its index)
    per snapshot, whatever the number of files, so a snapshot still lands when the filesystem
    has few inodes left (an agent that used them all up)."""

    def __init__(self, run_dir: Path, workspace: Path, *, max_file_bytes: int = 1 << 20) -> None:
        self.run_dir, self.workspace, self.max_file_bytes = run_dir, workspace, max_file_bytes
        self.git_dir = run_dir / "code-history.git"
        self.index = run_dir / "code-history.jsonl"
        self._lock = threading.Lock()
        self._hash_cache: dict[tuple[str, int, int], str] = {}
        if not self.git_dir.exists():
            self._git("init", "--quiet", "--bare", str(self.git_dir), use_dir=False)

    def _git(self, *args: str, use_dir: bool = True) -> bytes:
        cmd = ["git", f"--git-dir={self.git_dir}"] if use_dir else ["git"]
        done = subprocess.run(cmd + list(args), capture_output=True, env={**os.environ, **_GIT_ENV})
        if done.returncode:
            raise _git_failure(args[0], done.stderr)
        return done.stdout.strip()

    def _sha256_fd(self, fd: int, rel: str, st: os.stat_result) -> str:
        key = (rel, st.st_size, st.st_mtime_ns)
        if key not in self._hash_cache:
            h = hashlib.sha256()
            while chunk := os.read(fd, 1 << 22):
                h.update(chunk)
            self._hash_cache[key] = h.hexdigest()
        return self._hash_cache[key]

    def _capture(self, dir_fd: int, name: str, rel: Path, large: list[LargeFile],
                 add: Callable[[str, Path, bytes], None]) -> bool:
        """Capture one entry, opened relative to its (pinned) folder without following a
        symlink; the checks are made on the opened descriptor, which is what gets read."""
        try:
            fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                return False  # deleted meanwhile, or unreadable
            # A symlink: record the link itself (its target text), never what it points at.
            try:
                target = os.readlink(os.fsencode(name), dir_fd=dir_fd)
            except OSError:
                return False
            add(_SYMLINK, rel, target)
            return True
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return False  # fifos, sockets, devices: nothing to record, nothing to read
            if st.st_size > self.max_file_bytes:
                large.append(LargeFile(path=str(rel), size=st.st_size,
                                       sha256=self._sha256_fd(fd, str(rel), st)))
                return True
            # Read at most one byte past the cap: a file growing meanwhile is cut, not followed.
            data = b""
            while len(data) <= self.max_file_bytes:
                chunk = os.read(fd, self.max_file_bytes + 1 - len(data))
                if not chunk:
                    break
                data += chunk
            if len(data) > self.max_file_bytes:
                large.append(LargeFile(path=str(rel), size=len(data),
                                       sha256=hashlib.sha256(data).hexdigest()))
                return True
            add(_FILE, rel, data)
            return True
        finally:
            os.close(fd)

    def _stream(self, add: Callable[[str, Path, bytes], None]) -> int:
        """Walk the workspace, passing each captured entry to `add`; returns how many."""
        large: list[LargeFile] = []
        count = 0
        # The walk opens each folder relative to its parent's descriptor without following
        # symlinks (a folder swapped for a link mid-walk is not entered), iteratively (a folder
        # deeper than the recursion limit does not stop the snapshot: what lies below the cap is
        # listed in NOT_RECORDED.json).
        left_out = WalkStats()
        for root, dirs, files, root_fd in fwalk(self.workspace, stats=left_out):
            rel_root = Path(root)
            if root == ".":
                dirs[:] = [d for d in dirs if d not in EXCLUDED_TOP]
                files = [f for f in files if f not in EXCLUDED_TOP]
            dirs[:] = [d for d in dirs if d not in (".git", "__pycache__")]
            for name in sorted(files):  # files, and links to anything (recorded as links)
                # git keeps no entry named .git (any case) in a tree
                if name.lower() != ".git" and self._capture(root_fd, name, rel_root / name,
                                                            large, add):
                    count += 1
        add(_FILE, Path("LARGE_FILES.json"), json.dumps(
            [f.model_dump() for f in sorted(large, key=lambda f: f.path)], indent=1).encode())
        if not left_out.complete:
            add(_FILE, Path(NOT_RECORDED), json.dumps(
                {"too_deep": left_out.too_deep[:100], "swapped": left_out.swapped[:100],
                 "unreadable": left_out.unreadable[:100]}, indent=1).encode())
        return count

    def _import(self, tag: str, elapsed_s: float, parent: str | None) -> int:
        """One commit of the workspace as it is now on the branch HEAD names, tagged `tag`,
        written by `git fast-import` into a single pack. Returns the files captured."""
        branch = self._git("symbolic-ref", "HEAD").decode()
        proc = subprocess.Popen(
            ["git", f"--git-dir={self.git_dir}", "-c", "fastimport.unpackLimit=0", "fast-import",
             "--quiet", "--force", "--done", "--date-format=now"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**os.environ, **_GIT_ENV})
        out, stderr = proc.stdin, proc.stderr
        assert out is not None and stderr is not None
        errors: list[bytes] = []  # read meanwhile: a full pipe would stop git, and the stream
        drain = threading.Thread(target=lambda: errors.append(stderr.read()), daemon=True)
        drain.start()
        message = f"snapshot {tag} at {elapsed_s:.0f} s".encode()

        def add(mode: str, rel: Path, data: bytes) -> None:
            out.write(b"M %s inline %s\ndata %d\n%s\n" % (mode.encode(), _quoted(os.fsencode(rel)),
                                                         len(data), data))

        count = 0
        try:
            out.write(b"commit %s\nmark :1\ncommitter a2rl <a2rl@localhost> now\ndata %d\n%s\n"
                      % (branch.encode(), len(message), message))
            if parent is not None:
                out.write(b"from %s\n" % parent.encode())
            out.write(b"deleteall\n")
            count = self._stream(add)
            out.write(b"\nreset refs/tags/%s\nfrom :1\n\ndone\n" % tag.encode())
            out.close()
        except BrokenPipeError:
            pass  # fast-import stopped: its own message says why
        finally:
            if not out.closed:
                with contextlib.suppress(BrokenPipeError):
                    out.close()
            code = proc.wait()
            drain.join()
        if code:
            raise _git_failure("fast-import", b"".join(errors))
        return count

    def snapshot(self, tag: str, elapsed_s: float) -> Snapshot:
        with self._lock:
            try:
                parent: str | None = self._git("rev-parse", "--verify", "--quiet", "HEAD").decode()
            except subprocess.CalledProcessError:
                parent = None  # the first snapshot
            files = self._import(tag, elapsed_s, parent)
            commit = self._git("rev-parse", f"refs/tags/{tag}").decode()
            names = self._git("diff-tree", "-r", "-z", "--name-only", "--no-commit-id", parent,
                              commit) if parent else \
                self._git("ls-tree", "-r", "-z", "--name-only", commit)
            changed = [n for n in (_decoded(raw) for raw in names.split(b"\0") if raw)
                       if n != "LARGE_FILES.json"]
            snap = Snapshot(tag=tag, commit=commit, taken_at=utcnow().isoformat(),
                            elapsed_s=round(elapsed_s, 2), files=files, changed=changed)
            with self.index.open("a") as fh:
                fh.write(snap.model_dump_json() + "\n")
            return snap


def _quoted(path: bytes) -> bytes:
    """A path in fast-import's C-style quoting: any byte may be in a name."""
    out = bytearray(b'"')
    for byte in path:
        if byte in b'"\\':
            out += b"\\" + bytes([byte])
        elif 0x20 <= byte < 0x7F:
            out.append(byte)
        else:
            out += b"\\%03o" % byte
    return bytes(out) + b'"'


def _decoded(raw: bytes) -> str:
    """A name git printed with -z (its bytes as they are), as text (undecodable bytes replaced)."""
    return raw.decode("utf-8", "replace")


def _git_failure(command: str, stderr: bytes) -> Exception:
    """A failed git command as an exception: the storage refusing a write as the OSError it
    is (a full filesystem, a quota, a read-only mount), anything else with git's message."""
    text = stderr.decode(errors="replace").strip()
    for number in sorted(STORAGE_ERRNOS):
        if os.strerror(number) in text:
            return OSError(number, f"git {command}: {text}")
    return subprocess.CalledProcessError(1, ["git", command], stderr=text)


def read_snapshots(run_dir: Path) -> list[Snapshot]:
    path = run_dir / "code-history.jsonl"
    if not path.exists():
        return []
    return [Snapshot.model_validate_json(line) for line in path.read_text().splitlines()
            if line.strip()]


def diff_stat(run_dir: Path, old: str | None, new: str) -> list[str]:
    """`git diff --stat` of the agent's code (not output/) between two snapshots."""
    git_dir = run_dir / "code-history.git"
    args = ["git", f"--git-dir={git_dir}"]
    if old is None:
        args += ["show", "--stat", "--format=", new]
    else:
        args += ["diff", "--stat", old, new]
    out = subprocess.run(args + ["--", ".", ":(exclude)output", ":(exclude)LARGE_FILES.json",
                                 f":(exclude){NOT_RECORDED}"],
                         capture_output=True, text=True)
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def snapshot_files(run_dir: Path, commit: str) -> dict[str, str]:
    """Text of every file in a snapshot (path -> content), for analysis."""
    git_dir = run_dir / "code-history.git"
    # -z: names as they are (without it git C-quotes names with quotes, backslashes, control
    # or non-ASCII bytes, and `git show <commit>:"<quoted>"` finds no such file)
    listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", "--name-only",
                              commit], capture_output=True, check=True).stdout
    out: dict[str, str] = {}
    for raw in listing.split(b"\0"):
        if not raw:
            continue
        blob = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{os.fsdecode(raw)}"],
                              capture_output=True, check=True).stdout
        out[_decoded(raw)] = blob.decode(errors="replace")
    return out
