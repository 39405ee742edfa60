"""The base model in the workspace, without copying it.

In a sandbox, `model/` is a bind point (`a2rl.sandbox.make_bind_point`): the resolved model
folder is mounted over it read-only, so no byte is written and the agent cannot change what
every later run starts from. That folder is the resolved one itself when it holds the model's
files and nothing else (most local folders). Otherwise its files (`model_files`) are first
gathered once per model into a folder of hard links under `$A2RL_HOME/models/views/` (clones or
copies where they lie on another file system): a Hugging Face Hub snapshot is a folder of
symbolic links into the hub's blob store, which would dangle inside the sandbox, and hidden
files (an embedded model's `.complete` marker, a local folder's `.git/`) and sub-folders are
not the agent's to see.

Without a sandboxed backend (`--sandbox none`) nothing can be mounted: `model/` is a copy (a
clone where the file system can make one), checked against the base model at the close.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import uuid
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl._paths import cache_dir
from a2rl.models import ResolvedModel, clone_or_copy, weights_hash


def model_files(folder: Path) -> list[Path]:
    """The files of a model folder the agent is shown: the top-level, non-hidden files (through
    symbolic links); sub-folders and hidden files (a cache's `.complete` marker) are left out."""
    return [p for p in sorted(folder.iterdir()) if not p.name.startswith(".") and p.is_file()]


def _plain(folder: Path) -> bool:
    """Every entry is a regular, non-hidden file (no link, no sub-folder): the folder shows
    exactly `model_files` and is mountable as it is."""
    return all(stat.S_ISREG(p.lstat().st_mode) and not p.name.startswith(".")
               for p in folder.iterdir())


def mount_source(base: ResolvedModel) -> Path:
    """The host folder mounted read-only at the workspace's `model/` (see the module
    docstring)."""
    if _plain(base.path):
        return base.path
    files = model_files(base.path)
    # Keyed by the weights and by the identity of each file it gathers: a source changed in
    # place gets a new folder, never a stale one.
    key = hashlib.sha256(base.content_hash.encode())
    for f in files:
        st = f.stat()
        key.update(f"{f.name}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    view = cache_dir("models", "views") / key.hexdigest()[:32]
    if view.is_dir():
        return view
    staging = view.with_name(f".staging-{uuid.uuid4().hex}")
    staging.mkdir()
    try:
        for f in files:
            real = f.resolve()
            try:
                os.link(real, staging / f.name)
            except OSError:  # another file system, or links refused (protected_hardlinks)
                clone_or_copy(real, staging / f.name)
                (staging / f.name).chmod(0o444)
        staging.chmod(0o555)
        try:
            os.rename(staging, view)
        except OSError:  # made meanwhile by another run
            pass
    finally:
        if staging.exists():
            staging.chmod(0o755)
            shutil.rmtree(staging, ignore_errors=True)
    return view


def copy_model(base: ResolvedModel, target: Path) -> None:
    """`--sandbox none`: the agent's own copy of the model files (clones where possible)."""
    target.mkdir()
    for f in model_files(base.path):
        clone_or_copy(f, target / f.name)


def model_copy_changes(copy: Path, base: ResolvedModel) -> list[str]:
    """What differs between the workspace's copy of the model and the base model (an
    unsandboxed agent can write to it): names of files changed, added or removed, or
    `weights` when the tensors differ. Empty when it is intact."""
    try:
        if not copy.is_dir() or copy.is_symlink():
            return ["model/ (missing)"]
        source = {f.name: f for f in model_files(base.path)}
        here = {p.name: p for p in sorted(copy.iterdir())}
        changed = sorted(set(source) ^ set(here))
        for name in sorted(set(source) & set(here)):
            p = here[name]
            if not stat.S_ISREG(p.lstat().st_mode) or (
                    not name.endswith(".safetensors") and _sha256(p) != _sha256(source[name])):
                changed.append(name)
        if not changed and weights_hash(copy) != base.content_hash:
            changed.append("weights")
        return changed
    except (A2RLError, OSError) as exc:  # a file or header the agent broke or made unreadable
        return [f"model/ unreadable ({exc})"]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()
