"""Artifact index: every model folder that appears under workspace/output/, with its lineage.

A folder counts as a model when it holds a config.json or an adapter_config.json. Its parent is
read from what training libraries leave behind: `_name_or_path` in config.json, the adapter's
`base_model_name_or_path`, or a `model`/`model_name_or_path` field in a training-arguments JSON
next to it. Paths inside the workspace are made relative so lineage reads `model → output/v1 →
output/v2`.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

from pydantic import BaseModel

from a2rl._util import utcnow
from a2rl._walk import fwalk
from a2rl.models import weights_hash

_ARGS_FILES = ("a2rl_train_args.json", "training_args.json", "train_args.json", "args.json")


class ArtifactEntry(BaseModel):
    """One line of `artifact-index.jsonl` (a new line whenever a folder appears or changes)."""

    path: str
    """Relative to the workspace (e.g. `output/v1`)."""
    kind: str
    """`model` (full checkpoint) or `adapter` (PEFT adapter only)."""
    first_seen_at: str
    """When the recorder first saw the folder in this state (UTC)."""
    elapsed_s: float
    """Seconds of the agent's budget used at that moment."""
    mtime: float
    """Newest modification time of the folder's files."""
    size_bytes: int
    weights_hash: str | None
    """Tensor hash (None for adapters or unreadable weights)."""
    parent: str | None
    """The checkpoint it was initialised from, when that can be told."""
    parent_source: str | None
    """Which file the parent was read from."""


def _rel(value: str, workspace: Path) -> str:
    p = Path(value)
    if not p.is_absolute():
        return value
    try:
        return str(p.resolve().relative_to(workspace.resolve()))
    except ValueError:
        return value


_MAX_JSON = 1 << 20


def _read_json(path: Path) -> object:
    """Parse a small JSON file, never through a symlink and never from a fifo or device (the
    agent controls these files; the harness must not be made to read a host file or block)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_JSON:
            raise ValueError(f"{path.name} is not a small regular file")
        return json.loads(os.read(fd, _MAX_JSON + 1))
    finally:
        os.close(fd)


def read_parent(folder: Path, workspace: Path) -> tuple[str | None, str | None]:
    for name in _ARGS_FILES:
        try:
            data = _read_json(folder / name)
        except (OSError, ValueError, RecursionError):
            continue
        for key in ("model", "model_name_or_path", "base_model", "init_from"):
            if isinstance(data, dict) and isinstance(data.get(key), str):
                return _rel(data[key], workspace), name
    for name, key in (("adapter_config.json", "base_model_name_or_path"),
                      ("config.json", "_name_or_path")):
        try:
            data = _read_json(folder / name)
        except (OSError, ValueError, RecursionError):
            continue
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, str) and value:
            return _rel(value, workspace), name
    return None, None


class ArtifactIndexer:
    def __init__(self, run_dir: Path, workspace: Path) -> None:
        self.workspace = workspace
        self.index = run_dir / "artifact-index.jsonl"
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def scan(self, elapsed_s: float) -> list[ArtifactEntry]:
        """Record folders that are new or changed since the last scan.

        The walk never follows a symlink (`output/` itself included: a link there is not
        walked at all), and each folder is read through the descriptor the walk opened, so a folder
        swapped for a link meanwhile is not where the reads land. A folder holding any symlink is
        skipped: the grader would refuse it, and its files are not read."""
        new: list[ArtifactEntry] = []
        output = self.workspace / "output"
        with self._lock:
            for root, dirs, files, root_fd in fwalk(output):
                dirs.sort()
                if "config.json" not in files and "adapter_config.json" not in files:
                    continue
                rel = "output" if root == "." else f"output/{root}"
                pinned = Path(f"/proc/self/fd/{root_fd}")
                try:
                    stats = {name: os.stat(name, dir_fd=root_fd, follow_symlinks=False)
                             for name in files}
                    if any(stat.S_ISLNK(st.st_mode) for st in stats.values()):
                        continue  # links to folders are listed with the files
                    regular = {n: st for n, st in stats.items() if stat.S_ISREG(st.st_mode)}
                    mtime = max(st.st_mtime for st in regular.values())
                    size = sum(st.st_size for st in regular.values())
                except (OSError, ValueError):
                    continue
                if self._seen.get(rel) == mtime:
                    continue
                self._seen[rel] = mtime
                kind = "model" if any(n.endswith(".safetensors") for n in regular) and \
                    "adapter_config.json" not in regular else "adapter"
                try:
                    digest = weights_hash(pinned) if kind == "model" else None
                except Exception:  # half-written weights: hash again on the next scan
                    digest = None
                    self._seen.pop(rel, None)
                parent, source = read_parent(pinned, self.workspace)
                new.append(ArtifactEntry(path=rel, kind=kind, first_seen_at=utcnow().isoformat(),
                                         elapsed_s=round(elapsed_s, 2), mtime=mtime,
                                         size_bytes=size, weights_hash=digest, parent=parent,
                                         parent_source=source))
            new.sort(key=lambda e: e.path)
            if new:
                with self.index.open("a") as fh:
                    for e in new:
                        fh.write(e.model_dump_json() + "\n")
        return new


def read_artifacts(run_dir: Path) -> list[ArtifactEntry]:
    path = run_dir / "artifact-index.jsonl"
    if not path.exists():
        return []
    return [ArtifactEntry.model_validate_json(line) for line in path.read_text().splitlines()
            if line.strip()]
