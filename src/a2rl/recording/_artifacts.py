"""Artifact index: every model folder that appears under workspace/output/, with its lineage.

A folder counts as a model when it holds a config.json or an adapter_config.json. Its parent is
read from what training libraries leave behind: `_name_or_path` in config.json, the adapter's
`base_model_name_or_path`, or a `model`/`model_name_or_path` field in a training-arguments JSON
next to it. Paths inside the workspace are made relative so lineage reads `model → output/v1 →
output/v2`.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from pydantic import BaseModel

from a2rl._util import utcnow
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


def _plain_file(p: Path) -> bool:
    """A regular file that is not a symlink (the agent's links are never followed: a link to a
    host file or a device must not be read by the harness)."""
    return p.is_file() and not p.is_symlink()


def _has_links(folder: Path, workspace: Path) -> bool:
    """True when the folder, any folder above it inside the workspace, or a file in it is a
    symlink."""
    p = folder
    while p != workspace and p != p.parent:
        if p.is_symlink():
            return True
        p = p.parent
    return any(f.is_symlink() for f in folder.iterdir())


def read_parent(folder: Path, workspace: Path) -> tuple[str | None, str | None]:
    for name in _ARGS_FILES:
        f = folder / name
        if _plain_file(f):
            try:
                data = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            for key in ("model", "model_name_or_path", "base_model", "init_from"):
                if isinstance(data, dict) and isinstance(data.get(key), str):
                    return _rel(data[key], workspace), name
    for name, key in (("adapter_config.json", "base_model_name_or_path"),
                      ("config.json", "_name_or_path")):
        f = folder / name
        if _plain_file(f):
            try:
                value = json.loads(f.read_text()).get(key)
            except (OSError, ValueError, AttributeError):
                continue
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
        """Record folders that are new or changed since the last scan."""
        new: list[ArtifactEntry] = []
        output = self.workspace / "output"
        with self._lock:
            for cfg in sorted(list(output.rglob("config.json")) +
                              list(output.rglob("adapter_config.json"))):
                folder = cfg.parent
                rel = str(folder.relative_to(self.workspace))
                if any(e.path == rel for e in new):
                    continue
                try:
                    if _has_links(folder, self.workspace):
                        continue  # not a model the grader would accept; never read through links
                    files = [p for p in folder.iterdir() if _plain_file(p)]
                    mtime = max(p.stat().st_mtime for p in files)
                    size = sum(p.stat().st_size for p in files)
                except (OSError, ValueError):
                    continue
                if self._seen.get(rel) == mtime:
                    continue
                self._seen[rel] = mtime
                kind = "model" if any(folder.glob("*.safetensors")) and not (
                    folder / "adapter_config.json").exists() else "adapter"
                try:
                    digest = weights_hash(folder) if kind == "model" else None
                except Exception:  # half-written weights: hash again on the next scan
                    digest = None
                    self._seen.pop(rel, None)
                parent, source = read_parent(folder, self.workspace)
                new.append(ArtifactEntry(path=rel, kind=kind, first_seen_at=utcnow().isoformat(),
                                         elapsed_s=round(elapsed_s, 2), mtime=mtime,
                                         size_bytes=size, weights_hash=digest, parent=parent,
                                         parent_source=source))
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
